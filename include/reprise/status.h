// Status and Result<T>: how every fallible operation in Reprise reports failure — the
// library's own code and its public C++ API alike (this header is part of the API and
// includes nothing of src/).
//
// Our code never throws. A function that can fail on input, I/O or resources returns a
// Status (no value) or a Result<T> (a value or a Status). Result<T> follows the
// std::expected interface (has_value, value, error, operator*, operator->) so that it can
// become an alias for std::expected under C++23.
#pragma once

#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace reprise {

// The closed list of error codes (docs/style.md §4).
enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kCorrupt,
  kIoError,
  kResourceExhausted,
  kUnavailable,
  kCancelled,
  kUnimplemented,
  kInternal,
};

std::string_view StatusCodeName(StatusCode code);

// A code plus a human-readable message. Cheap to copy when ok.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "Corrupt: tensor 'x' offset 12 past end of file" — for logs and the command line.
  std::string ToString() const;

  // Returns a copy whose message is "context: message"; an ok status stays ok.
  Status WithContext(std::string_view context) const;

  // Marks a status as deliberately not inspected.
  void IgnoreError() const {}

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFoundError(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status CorruptError(std::string message) {
  return Status(StatusCode::kCorrupt, std::move(message));
}
inline Status IoError(std::string message) {
  return Status(StatusCode::kIoError, std::move(message));
}
inline Status ResourceExhaustedError(std::string message) {
  return Status(StatusCode::kResourceExhausted, std::move(message));
}
inline Status UnavailableError(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
inline Status CancelledError(std::string message) {
  return Status(StatusCode::kCancelled, std::move(message));
}
inline Status UnimplementedError(std::string message) {
  return Status(StatusCode::kUnimplemented, std::move(message));
}
inline Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}

[[noreturn]] void DieOnBadResultAccess(const Status& status);

// A value of type T, or a non-ok Status. Constructing a Result from an ok Status is a bug.
template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_reference_v<T>, "Result<T&> is not supported; use a pointer");
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "use Status directly");

 public:
  using value_type = T;

  Result(const T& value) : has_value_(true) { new (&value_) T(value); }
  Result(T&& value) : has_value_(true) { new (&value_) T(std::move(value)); }
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, Result> &&
                                        !std::is_same_v<std::decay_t<U>, Status> &&
                                        !std::is_same_v<std::decay_t<U>, T>>>
  Result(U&& value) : has_value_(true) {
    new (&value_) T(std::forward<U>(value));
  }
  Result(Status status) : has_value_(false), status_(std::move(status)) {
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }

  Result(const Result& other) : has_value_(other.has_value_), status_(other.status_) {
    if (has_value_) new (&value_) T(other.value_);
  }
  Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>)
      : has_value_(other.has_value_), status_(std::move(other.status_)) {
    if (has_value_) new (&value_) T(std::move(other.value_));
  }
  Result& operator=(const Result& other) {
    if (this != &other) {
      Destroy();
      has_value_ = other.has_value_;
      status_ = other.status_;
      if (has_value_) new (&value_) T(other.value_);
    }
    return *this;
  }
  Result& operator=(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>) {
    if (this != &other) {
      Destroy();
      has_value_ = other.has_value_;
      status_ = std::move(other.status_);
      if (has_value_) new (&value_) T(std::move(other.value_));
    }
    return *this;
  }
  ~Result() { Destroy(); }

  bool has_value() const { return has_value_; }
  bool ok() const { return has_value_; }
  explicit operator bool() const { return has_value_; }

  // Requires: has_value(). Accessing the value of an error aborts with the status.
  T& value() & {
    if (!has_value_) DieOnBadResultAccess(status_);
    return value_;
  }
  const T& value() const& {
    if (!has_value_) DieOnBadResultAccess(status_);
    return value_;
  }
  T&& value() && {
    if (!has_value_) DieOnBadResultAccess(status_);
    return std::move(value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value_ ? value_ : static_cast<T>(std::forward<U>(fallback));
  }

  // The error; an ok Status when there is a value.
  const Status& error() const { return status_; }
  const Status& status() const { return status_; }

 private:
  void Destroy() {
    if (has_value_) value_.~T();
    has_value_ = false;
  }

  bool has_value_;
  union {
    T value_;
  };
  Status status_;
};

}  // namespace reprise
