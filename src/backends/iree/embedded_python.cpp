#include "backends/iree/embedded_python.h"

#include <Python.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>

#include "common/error.h"
#include "common/venv.h"

namespace xlacel::backends {

namespace fs = std::filesystem;
namespace py = pybind11;

namespace {

// "python3.11": the site-packages directory name of the Python we are linked against.
std::string python_directory() {
  return fmt::format("python{}.{}", PY_MAJOR_VERSION, PY_MINOR_VERSION);
}

// Initializes the interpreter as if `python` (the venv's bin/python) had been started: Python
// then finds pyvenv.cfg next to it and puts the venv's site-packages on sys.path. For a
// self-contained prefix (`home`: its own standard library, as the GPU bundle carries in place of
// a venv) Python's home is set to it instead. Isolated (no PYTHON* environment variables, no
// user site) and without Python's own signal handlers, so Ctrl-C still ends the program.
void start_interpreter(const fs::path& python, const fs::path& home) {
  // numpy's OpenBLAS would start a thread per core when imported, which spin for a while and take
  // the cores from loading and from IREE's workers, slowing a server's start (docs/PERFORMANCE.md,
  // "OpenBLAS threads"); the embedded Python does no linear algebra. (Read by OpenBLAS from the
  // process environment; a value already set is kept.)
  setenv("OPENBLAS_NUM_THREADS", "1", 0);
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  config.install_signal_handlers = 0;
  PyStatus status = PyConfig_SetBytesString(&config, &config.executable, python.c_str());
  if (!PyStatus_Exception(status)) {
    status = PyConfig_SetBytesString(&config, &config.program_name, python.c_str());
  }
  if (!PyStatus_Exception(status) && !home.empty()) {
    status = PyConfig_SetBytesString(&config, &config.home, home.c_str());
  }
  if (PyStatus_Exception(status)) {
    PyConfig_Clear(&config);
    fail("iree backend", "cannot configure the embedded Python: {}",
         status.err_msg != nullptr ? status.err_msg : "unknown error");
  }
  py::initialize_interpreter(&config, 0, nullptr, false);
  PyConfig_Clear(&config);
}

// Finds the venv, starts Python in it and imports iree.runtime. Python is left up without the
// GIL held (even when the import fails): see ensure_python_with_iree_runtime.
void start_python_with_iree_runtime() {
  const fs::path site_runtime =
      fs::path("lib") / python_directory() / "site-packages" / "iree" / "runtime";
  std::optional<fs::path> runtime = find_in_venv(site_runtime);
  if (!runtime) {
    // A venv of another Python would have lib/pythonX.Y of another version: say so.
    std::string other;
    if (auto lib = find_in_venv("lib")) {
      std::error_code error;
      for (fs::directory_iterator it(*lib, error), end; !error && it != end; it.increment(error)) {
        if (it->path().filename().string() != python_directory()) {
          other = fmt::format(" ({} has {}, but xlacel embeds {})", lib->parent_path().string(),
                              it->path().filename().string(), python_directory());
        }
      }
    }
    fail("iree backend",
         "Python package iree.runtime not found in a venv for {} (looked at {}){}; {}",
         python_directory(), kVenvSearchDescription, other, kIreeRuntimeInstallHint);
  }
  const fs::path venv =
      runtime->parent_path().parent_path().parent_path().parent_path().parent_path();
  const fs::path python = venv / "bin" / "python";
  std::error_code error;
  // A venv has pyvenv.cfg; a prefix with its own standard library needs no bin/python.
  const bool prefix = !fs::exists(venv / "pyvenv.cfg", error) &&
                      fs::exists(venv / "lib" / python_directory() / "os.py", error);
  if (!prefix && !fs::exists(python, error)) {
    fail("iree backend", "{} has no bin/python; recreate it with scripts/setup", venv.string());
  }
  start_interpreter(python, prefix ? venv : fs::path());
  std::optional<Error> import_error;
  try {
    // A venv's site-packages is on sys.path already; a prefix's is not where Debian's site.py
    // looks outside a venv (it wants dist-packages), so it is added here.
    if (prefix) {
      py::module_::import("site").attr("addsitedir")(
          (venv / "lib" / python_directory() / "site-packages").string());
    }
    py::module_::import("iree.runtime");
  } catch (const py::error_already_set& e) {
    import_error = Error(fmt::format("iree backend: cannot import iree.runtime from {}: {}; {}",
                                     venv.string(), one_line(e), kIreeRuntimeInstallHint));
  }
  // Let go of the GIL for good (this thread state is never restored): from now on each use of
  // Python takes it, on whatever thread it runs.
  PyEval_SaveThread();
  if (import_error) throw *import_error;
}

}  // namespace

void ensure_python_with_iree_runtime() {
  // Once Python is up it cannot be started again, so a failure after that is remembered and
  // given to every later caller.
  static std::mutex mutex;
  static bool started = false;
  static std::optional<Error> failure;
  std::lock_guard lock(mutex);
  if (started) {
    if (failure) throw *failure;
    return;
  }
  try {
    start_python_with_iree_runtime();
  } catch (const Error& e) {
    if (!Py_IsInitialized()) throw;  // nothing started: a later call may find the venv
    failure = e;
  }
  started = true;
  if (failure) throw *failure;
}

py::module_ load_python_module(const std::string& name, const char* source) {
  try {
    py::object module = py::module_::import("types").attr("ModuleType")(name);
    py::exec(source, module.attr("__dict__"));
    return py::reinterpret_borrow<py::module_>(module);
  } catch (const py::error_already_set& e) {
    fail(name, "{}", one_line(e));
  }
}

namespace {

std::string first_line(std::string text) {
  if (std::size_t end = text.find('\n'); end != std::string::npos) text.resize(end);
  return text;
}

}  // namespace

std::string one_line(const py::error_already_set& error) {
  // pybind11 appends the traceback after the first line; keep the first line, and the first
  // line of the exception that caused it (an extension's ImportError hides the real reason).
  std::string text = first_line(error.what());
  py::object cause = error.value().attr("__cause__");
  if (!cause.is_none()) {
    text += fmt::format(" (caused by {}: {})",
                        py::str(cause.get_type().attr("__name__")).cast<std::string>(),
                        first_line(py::str(cause).cast<std::string>()));
  }
  return text;
}

}  // namespace xlacel::backends
