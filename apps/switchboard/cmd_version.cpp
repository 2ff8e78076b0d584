// switchboard version — prints the library version.
#include "command.hpp"

#include <iostream>

namespace {

int run_version(std::span<const std::string>) {
  std::cout << "switchboard 0.1.0\n";
  return switchboard::cli::exit_ok;
}

const switchboard::cli::command_registration registration{"version", "print the version",
                                                          &run_version};

}  // namespace
