#pragma once
// Errors as the APIs report them: an HTTP status and, for OpenAI's endpoints, {"error":
// {"message", "type", "param", "code"}}; for Anthropic's (/v1/messages), {"type": "error",
// "error": {"type", "message"}}. Client libraries read these fields, so the shape is part of the
// API.
#include <stdexcept>
#include <string>

#include "common/json_file.h"

namespace xlacel::server {

// Which API's shape an error takes: that of the endpoint the request went to.
enum class ApiShape { kOpenAi, kAnthropic };

class ApiError : public std::runtime_error {
 public:
  ApiError(int http_status, std::string error_type, const std::string& message,
           std::string error_param = {}, std::string error_code = {})
      : std::runtime_error(message),
        status(http_status),
        type(std::move(error_type)),
        param(std::move(error_param)),
        code(std::move(error_code)) {}

  int status;
  std::string type;   // OpenAI's: "invalid_request_error", "authentication_error", ...
  std::string param;  // the request field at fault; empty when none
  std::string code;   // e.g. "context_length_exceeded"; empty when none

  Json body(ApiShape shape = ApiShape::kOpenAi) const;
};

// 400 naming the request field at fault.
ApiError invalid_request(std::string param, const std::string& message, std::string code = {});

}  // namespace xlacel::server
