#include "server/api_error.h"

namespace xlacel::server {

namespace {

Json null_if_empty(const std::string& value) {
  return value.empty() ? Json() : Json(value);
}

// Anthropic's error type for an HTTP status (its errors page lists one type per status).
const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

Json ApiError::body(ApiShape shape) const {
  if (shape == ApiShape::kAnthropic) {
    return {{"type", "error"},
            {"error", {{"type", anthropic_error_type(status)}, {"message", what()}}}};
  }
  return {{"error",
           {{"message", what()},
            {"type", type},
            {"param", null_if_empty(param)},
            {"code", null_if_empty(code)}}}};
}

ApiError invalid_request(std::string param, const std::string& message, std::string code) {
  return ApiError(400, "invalid_request_error", message, std::move(param), std::move(code));
}

}  // namespace xlacel::server
