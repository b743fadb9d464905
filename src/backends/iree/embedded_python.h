#pragma once
// The process's one embedded Python interpreter (Debian's libpython, the Python the project
// venv was made from), started on first use with the venv's site-packages (or a self-contained
// Python prefix found where a venv would be: the GPU bundle's .venv), for iree.runtime.
// Nothing outside src/backends/iree includes this.
#include <pybind11/embed.h>

#include <string>

namespace xlacel::backends {

// The install hint every "IREE runtime not found" Error carries.
inline constexpr const char* kIreeRuntimeInstallHint =
    "run scripts/setup (pip package iree-base-runtime)";

// Starts the interpreter with the venv that has iree.runtime installed (common/venv.h), or
// throws Error naming what is missing and what to install. The interpreter stays up for the
// life of the process (finalizing it under live IREE objects is not safe). Once it is up, no
// thread holds the GIL: every use of Python, from any thread, takes it with
// pybind11::gil_scoped_acquire (and releases it on return), so C++ callers need not care which
// thread started Python. Thread-safe.
void ensure_python_with_iree_runtime();

// Runs `source` as a new module called `name` and returns it; a Python exception becomes an
// Error "<name>: <exception>". Call with the GIL held.
pybind11::module_ load_python_module(const std::string& name, const char* source);

// "ExceptionType: message" on one line, for Errors. Call with the GIL held.
std::string one_line(const pybind11::error_already_set& error);

}  // namespace xlacel::backends
