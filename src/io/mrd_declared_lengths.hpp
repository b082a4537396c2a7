// The lengths an MRD file declares for each acquisition's trajectory and data, checked before HDF5 reads
// them: HDF5 allocates a variable-length member at its declared size before anything can check it, so a
// forged length (a 0.75 MB file claiming 2^29 floats) made the reader allocate gigabytes. The element's
// stored bytes (its header and the two variable-length descriptors: a 4-byte length and a heap reference
// each) are read raw, from the chunk (H5Dread_chunk) or the contiguous storage, and the lengths compared with
// the header and with the file's size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace radstream {

class MrdDeclaredLengths {
 public:
  // dataset: the open /dataset/data (an hid_t). A layout it cannot read raw (a filtered chunk, an odd type)
  // leaves the check off (the lengths are still checked after the read, as before).
  MrdDeclaredLengths(long long dataset, const std::string& path);
  // Throws IoError naming the file, the acquisition and the lengths when acquisition i declares a trajectory
  // or data length other than its header's samples x dimensions and 2 x samples x coils, or more floats than
  // the whole file holds.
  void check(std::size_t i);
  bool active() const { return layout_ != Layout::None; }

 private:
  enum class Layout { None, Chunked, Contiguous };
  Layout layout_ = Layout::None;
  long long dataset_ = -1;
  std::string path_;
  std::uint64_t file_bytes_ = 0;
  std::size_t elem_ = 0;  // bytes of one stored element
  std::size_t traj_at_ = 0, data_at_ = 0, samples_at_ = 0, channels_at_ = 0, dims_at_ = 0;
  std::uint64_t chunk_ = 0,
                cached_ = UINT64_MAX;  // elements per chunk; the first element of the cached chunk
  std::uint64_t contiguous_at_ = 0;    // file offset of the contiguous storage
  std::vector<unsigned char> buf_;
  const unsigned char* element(std::size_t i);
};

}  // namespace radstream
