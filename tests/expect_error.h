#pragma once
// Runs `body`, which must throw xlacel::Error with exactly `message`.
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace xlacel::testing {

template <typename Body>
void expect_error(const Body& body, const std::string& message) {
  try {
    body();
    ADD_FAILURE() << "no Error thrown, expected: " << message;
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

}  // namespace xlacel::testing
