// libismrmrd reports HDF5 failures twice: its default error handler prints every level of the HDF5 error
// stack to stderr ("ERROR: HDF5 Error in ../../../src/H5Fint.c, line 1670 ..."), and the exception it throws
// carries the same stack as a dozen lines. radstream reports each failure once, in one line that names the
// file.
#pragma once
#include <string>

namespace radstream {

// Replaces libismrmrd's printing error handler by a silent one (once per process; the errors still reach the
// exceptions). Called before every libismrmrd file operation.
void quiet_ismrmrd_errors();

// One line from libismrmrd's multi-line exception text: its first message, and the operating system's reason
// when the stack has one, e.g. "Failed to open file (No such file or directory)".
std::string short_hdf5_error(const std::string& what);

// Keeps the HDF5 library from closing, at process exit, files the program left open. Only an abandoned
// recording (MrdRawWriter::abandon after a write error) is left open: closing it would write HDF5 metadata
// that claims more than the disk holds (an unreadable file; libhdf5 1.10 also crashes closing it at exit),
// while left alone it stays readable as last flushed. Called first thing in main(), before any HDF5 call.
void hdf5_skip_exit_cleanup();

}  // namespace radstream
