#include "server/api_error.h"

namespace xlacel::server {

namespace {

Json null_if_empty(const std::string& value) {
  return value.empty() ? Json() : Json(value);
}

}  // namespace

Json ApiError::body() const {
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
