#include "kernels/quantize.h"
