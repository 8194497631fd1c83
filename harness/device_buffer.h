// device_buffer.h: RAII device memory on hy4::rt, with whole-buffer copies.
#pragma once

#include <cstddef>
#include <vector>

#include "platform/runtime.h"

namespace hy4::harness {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n), p_(static_cast<T*>(hy4::rt::malloc_device(n * sizeof(T)))) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : n_(o.n_), p_(o.p_) { o.p_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) hy4::rt::free_device(p_);
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  void upload(const std::vector<T>& h, hy4::rt::Stream s) { hy4::rt::copy_to_device(p_, h.data(), bytes(h), s); }
  void download(std::vector<T>& h, hy4::rt::Stream s) const {
    h.resize(n_);
    hy4::rt::copy_to_host(h.data(), p_, n_ * sizeof(T), s);
  }

 private:
  std::size_t bytes(const std::vector<T>& h) const { return (h.size() < n_ ? h.size() : n_) * sizeof(T); }
  std::size_t n_ = 0;
  T* p_ = nullptr;
};

// A stream that is destroyed with its scope.
class ScopedStream {
 public:
  ScopedStream() : s_(hy4::rt::create_stream()) {}
  ~ScopedStream() { hy4::rt::destroy_stream(s_); }
  ScopedStream(const ScopedStream&) = delete;
  ScopedStream& operator=(const ScopedStream&) = delete;
  operator hy4::rt::Stream() const { return s_; }
  hy4::rt::Stream get() const { return s_; }

 private:
  hy4::rt::Stream s_;
};

// Captures whatever `enqueue(stream)` puts on the stream into a graph, once; replays it.
class CapturedGraph {
 public:
  template <class F>
  CapturedGraph(hy4::rt::Stream s, F&& enqueue) : stream_(s) {
    hy4::rt::begin_capture(s);
    try {
      enqueue(s);
    } catch (...) {
      hy4::rt::destroy_graph(hy4::rt::end_capture(s));
      throw;
    }
    exec_ = hy4::rt::end_capture(s);
  }
  ~CapturedGraph() { hy4::rt::destroy_graph(exec_); }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void replay() { hy4::rt::replay(exec_, stream_); }

 private:
  hy4::rt::Stream stream_;
  hy4::rt::GraphExec exec_;
};

}  // namespace hy4::harness
