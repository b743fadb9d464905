#include "compile_cache/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "common/error.h"

extern char** environ;

namespace xlacel::compile_cache {

namespace {

// Closes what it holds on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct FileActions {
  posix_spawn_file_actions_t actions{};
  FileActions() { posix_spawn_file_actions_init(&actions); }
  ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

// Blocks SIGPIPE in this thread while feeding the child's stdin (a child that exits early must
// give EPIPE, not kill us), and swallows a SIGPIPE raised meanwhile unless one was already
// pending before.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      struct timespec zero {};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
};

std::array<int, 2> make_pipe(const std::string& program) {
  std::array<int, 2> fds{};
  if (::pipe2(fds.data(), O_CLOEXEC) != 0) {
    fail(program, "cannot create a pipe: {}", std::strerror(errno));
  }
  return fds;
}

}  // namespace

std::string ProcessResult::describe() const {
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, ::strsignal(signal));
  return fmt::format("exit status {}", exit_status);
}

ProcessResult run_process(const std::vector<std::string>& argv, std::string_view input) {
  if (argv.empty()) fail("run_process", "no program given");
  const std::string& program = argv[0];
  auto [in_read_fd, in_write_fd] = make_pipe(program);
  Fd in_read{in_read_fd};
  Fd in_write{in_write_fd};
  auto [out_read_fd, out_write_fd] = make_pipe(program);
  Fd out_read{out_read_fd};
  Fd out_write{out_write_fd};

  FileActions files;
  posix_spawn_file_actions_adddup2(&files.actions, in_read.fd, STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&files.actions, out_write.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&files.actions, out_write.fd, STDERR_FILENO);

  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  pid_t pid = 0;
  int spawn_error =
      ::posix_spawn(&pid, program.c_str(), &files.actions, nullptr, args.data(), environ);
  if (spawn_error != 0) fail(program, "cannot run: {}", std::strerror(spawn_error));
  // Only the child's copies stay open: reading then sees end-of-file when the child exits.
  in_read.reset();
  out_write.reset();

  ProcessResult result;
  {
    SigpipeBlock no_sigpipe;
    if (input.empty()) {
      in_write.reset();
    } else {
      ::fcntl(in_write.fd, F_SETFL, ::fcntl(in_write.fd, F_GETFL) | O_NONBLOCK);
    }
    std::array<char, 1 << 14> buffer{};
    while (out_read.fd >= 0) {
      std::array<pollfd, 2> polls = {pollfd{out_read.fd, POLLIN, 0},
                                     pollfd{in_write.fd, POLLOUT, 0}};
      nfds_t count = in_write.fd >= 0 ? 2 : 1;
      if (::poll(polls.data(), count, -1) < 0) {
        if (errno == EINTR) continue;
        fail(program, "poll failed: {}", std::strerror(errno));
      }
      if (count == 2 && polls[1].revents != 0) {
        ssize_t wrote = ::write(in_write.fd, input.data(), input.size());
        if (wrote > 0) {
          input.remove_prefix(static_cast<std::size_t>(wrote));
          if (input.empty()) in_write.reset();
        } else if (wrote < 0 && errno != EINTR && errno != EAGAIN) {
          in_write.reset();  // EPIPE: the child stopped reading; its exit status tells why
        }
      }
      if (polls[0].revents != 0) {
        ssize_t got = ::read(out_read.fd, buffer.data(), buffer.size());
        if (got > 0) {
          result.output.append(buffer.data(), static_cast<std::size_t>(got));
        } else if (got == 0 || errno != EINTR) {
          out_read.reset();
        }
      }
    }
    in_write.reset();
  }

  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) fail(program, "cannot wait for the process: {}", std::strerror(errno));
  }
  if (WIFEXITED(status)) {
    result.exit_status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

}  // namespace xlacel::compile_cache
