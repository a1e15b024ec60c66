// Public error type of the Reprise API: Status and Result<T> (see src/base/status.h).
#pragma once

#include "base/status.h"
