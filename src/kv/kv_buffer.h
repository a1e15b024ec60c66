// KvBuffer: the container of a chunk's K or V values (f16 bits), a std::vector with an
// allocator made for large tensors that are filled right after they are sized:
//  - resize(n) leaves new elements uninitialised (default-initialised, not zeroed): a chunk
//    loaded from flash is read straight into its buffer, and zeroing 50 MB first would cost
//    a pass over memory for nothing. Use assign(n, 0) or resize(n, 0) where zeros are wanted;
//  - blocks of 4 MiB and more are advised to use transparent huge pages, so that filling them
//    takes a few page faults instead of one per 4 KiB page (the dominant cost of loading a
//    chunk from a fast disk).
// Thread-safe (stateless).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace reprise::kv {

// Advises the kernel to back the 2 MiB-aligned interior of [data, data + bytes) with huge
// pages. Best effort: does nothing where unsupported.
void AdviseHugePages(void* data, size_t bytes);

template <typename T>
class KvBufferAllocator {
 public:
  using value_type = T;
  static constexpr size_t kHugeBlockBytes = size_t{4} << 20;

  KvBufferAllocator() noexcept = default;
  template <typename U>
  KvBufferAllocator(const KvBufferAllocator<U>&) noexcept {}  // NOLINT: rebinding

  T* allocate(size_t n) {
    // std::vector never asks for more than max_size() elements, so n * sizeof(T) fits.
    T* p = static_cast<T*>(::operator new(n * sizeof(T)));
    if (n * sizeof(T) >= kHugeBlockBytes) AdviseHugePages(p, n * sizeof(T));
    return p;
  }
  void deallocate(T* p, size_t) noexcept { ::operator delete(p); }

  // Value-less construction default-initialises (for uint16_t: leaves it as it is).
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }

  friend bool operator==(const KvBufferAllocator&, const KvBufferAllocator&) { return true; }
};

using KvBuffer = std::vector<uint16_t, KvBufferAllocator<uint16_t>>;

}  // namespace reprise::kv
