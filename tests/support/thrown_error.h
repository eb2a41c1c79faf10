// thrown_error(): runs an action that must throw dit::Error and returns what it threw, so a test
// can check the error's kind and message.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"

namespace dit::test {

// Records a test failure (and returns a placeholder error) when `action` throws nothing.
inline Error thrown_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const Error& error) {
    return error;
  }
  ADD_FAILURE() << "no dit::Error was thrown";
  return Error(ErrorKind::invalid_argument, "<nothing thrown>");
}

}  // namespace dit::test
