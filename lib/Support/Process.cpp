//===- Process.cpp - starting rank processes ------------------------------===//

#include "dtensor/Support/Process.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <chrono>
#include <csignal>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

using namespace mlir::dtensor;

int mlir::dtensor::runWithTimeout(const std::vector<std::string> &argv,
                                  int64_t timeoutSeconds) {
  std::vector<char *> args;
  for (const std::string &arg : argv)
    args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0)
    return kCannotStart;
  if (pid == 0) {
    setpgid(0, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(timeoutSeconds);
  while (true) {
    int status;
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGTERM);
      std::this_thread::sleep_for(std::chrono::seconds(2));
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      return kTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

llvm::Expected<std::vector<std::string>>
mlir::dtensor::getMpirunCommand(const std::string &mpirun, int64_t ranks,
                                const std::vector<std::string> &program,
                                const std::string &sessionDir) {
  auto found = llvm::sys::findProgramByName(mpirun);
  if (!found || !llvm::sys::fs::can_execute(*found))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "'" + mpirun +
            "' not found: install OpenMPI (scripts/setup.sh does) or pass "
            "--mpirun");
  std::vector<std::string> command;
  if (!sessionDir.empty()) {
    auto env = llvm::sys::findProgramByName("env");
    if (env)
      command = {*env, "TMPDIR=" + sessionDir};
  }
  command.push_back(*found);
  if (getuid() == 0)
    command.push_back("--allow-run-as-root");
  for (const char *arg : {"--oversubscribe", "--bind-to", "none", "-n"})
    command.push_back(arg);
  command.push_back(std::to_string(ranks));
  command.insert(command.end(), program.begin(), program.end());
  return command;
}
