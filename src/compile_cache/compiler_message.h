#pragma once
// A compiler's output cut down to what fits an Error's one line: the first error lines (or,
// without any, the first lines), with the temporary input's name replaced by the real source.
#include <cstddef>
#include <string>
#include <string_view>

namespace xlacel::compile_cache {

std::string summarize_compiler_output(std::string_view output, std::string_view input_path,
                                      std::string_view source, std::size_t max_lines = 3);

}  // namespace xlacel::compile_cache
