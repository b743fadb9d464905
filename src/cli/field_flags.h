#pragma once
// The library names the field of its options that a value is wrong in (FieldError, e.g.
// "prefill_bucket"); the CLI names the flag that set it ("--prefill-bucket").
#include <string>

#include "common/error.h"

namespace xlacel::cli {

// The error's message with the flag that sets its field in place of the field, or as it is
// when no flag sets it.
std::string message_with_flag(const FieldError& error);

}  // namespace xlacel::cli
