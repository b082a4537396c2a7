// Typed errors. Library code throws these; only the command-line front end turns them into exit codes.
#pragma once
#include <stdexcept>
#include <string>

namespace radstream {

// Base of every radstream error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration value or command-line option is unknown or out of range. Stops the program at start-up.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A file cannot be read or written, or its content is malformed. The message names the file.
class IoError : public Error {
 public:
  using Error::Error;
};

// Data (a frame, a spoke, a message) does not satisfy a stage's contract. Counted and skipped at run time.
class InputError : public Error {
 public:
  using Error::Error;
};

// A reconstruction produced values that are not finite (NaN or Inf): the frame is dropped and counted, never
// shown or sent. Thrown by the chain's check of its output.
class NumericError : public Error {
 public:
  using Error::Error;
};

// A CUDA or cuFFT call failed; carries the call, file and line in its message.
class CudaError : public Error {
 public:
  CudaError(const std::string& call, const std::string& what, const char* file, int line)
      : Error(call + " failed: " + what + " (" + file + ":" + std::to_string(line) + ")") {}
};

}  // namespace radstream
