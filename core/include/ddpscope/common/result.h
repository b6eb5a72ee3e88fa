// SPDX-License-Identifier: GPL-2.0-or-later
// Decoders return, they don't throw: ok / need-more(n) / malformed(code, offset).
#pragma once

#include <cstddef>
#include <string>
#include <utility>

namespace ddpscope {

enum class DecodeStatus { ok, need_more, malformed };

struct DecodeError {
  std::string code;        // stable, dotted, e.g. "mpa.key-invalid"
  std::size_t offset = 0;  // octet offset in the input where decoding failed
  std::string message;     // one line for people
};

template <class T>
class Result {
 public:
  static Result ok(T value, std::size_t consumed) {
    Result r;
    r.status_ = DecodeStatus::ok;
    r.value_ = std::move(value);
    r.consumed_ = consumed;
    return r;
  }
  // The input is a valid prefix; `needed` octets in total are required.
  static Result need_more(std::size_t needed) {
    Result r;
    r.status_ = DecodeStatus::need_more;
    r.needed_ = needed;
    return r;
  }
  static Result malformed(std::string code, std::size_t offset, std::string message) {
    Result r;
    r.status_ = DecodeStatus::malformed;
    r.error_ = DecodeError{std::move(code), offset, std::move(message)};
    return r;
  }

  DecodeStatus status() const { return status_; }
  bool is_ok() const { return status_ == DecodeStatus::ok; }
  explicit operator bool() const { return is_ok(); }
  const T& value() const { return value_; }
  T& value() { return value_; }
  const T* operator->() const { return &value_; }
  const T& operator*() const { return value_; }
  std::size_t consumed() const { return consumed_; }
  std::size_t needed() const { return needed_; }
  const DecodeError& error() const { return error_; }

 private:
  DecodeStatus status_ = DecodeStatus::malformed;
  T value_{};
  std::size_t consumed_ = 0;
  std::size_t needed_ = 0;
  DecodeError error_;
};

}  // namespace ddpscope
