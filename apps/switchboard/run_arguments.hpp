// What `switchboard run` and `resume` read from their command lines in
// common, and the resume command they print for later: it repeats every
// option that decides what a resume loads (the workflow file, the loader's
// and the model's options, the store) and none of this invocation's own
// (output choices, --reset, answers).
//
// Thread-safety: plain functions and values.
#pragma once

#include <switchboard/host/opened_workflow.hpp>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace switchboard::cli {

// What a run or a resume is built from: the invoker's command line and
// environment (never a stored run).
struct run_settings {
  host::workflow_settings workflow;   // the workflow file, the loader's and the model's options
  std::string store_url;              // --store; "" = the default SQLite file
  std::filesystem::path metrics_file; // --metrics FILE ("-": standard error)
  bool json_output = false;
  bool verbose = false;
  bool stream = false;                // --stream: agents' model text as it arrives (stream_output.hpp)
};

// Takes the options run and resume share; false when args[i] is none.
// Paths are made absolute: the resume command printed must work from any
// directory.
bool take_run_option(std::span<const std::string> args, std::size_t& i, run_settings& settings);

// The usage lines of those options.
std::string run_options_usage();

// "resume ID --workflow FILE" and the options that make a resume of run
// `id` load what this one did, as words take_run_option reads back.
std::vector<std::string> resume_arguments(const std::string& id, const run_settings& settings);

// `words` as one shell command line, each quoted where it needs to be.
std::string shell_command(const std::vector<std::string>& words);

}  // namespace switchboard::cli
