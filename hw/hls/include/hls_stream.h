// hlsfuse work-alike of AMD's hls_stream.h: the C simulation model of hls::stream<T>.
//
// A stream is an unbounded FIFO in C simulation; the depth of the hardware FIFO comes from
// `#pragma HLS STREAM variable=s depth=N`, which C simulation ignores, so full() is always false.
// Stages of a DATAFLOW region run one after the other in C simulation, each consuming what the previous
// ones produced.
//
// Behaviour that differs from AMD's model, on purpose:
//   - Reading an empty stream prints "ERROR: hls::stream '<name>' is read while empty" to stderr and
//     aborts. AMD's model prints a warning and returns a default-constructed value; in hardware such a
//     read stalls forever, so hlsfuse's C simulation stops at the first one instead of running on with
//     made-up data.
//   - A stream still holding data when destroyed prints a warning to stderr (AMD prints it to stdout).
// Give every stream a name (`hls::stream<T> s("s");`) so that these messages say which one it was.
//
// API (all of it is also in AMD's model): stream(), stream(name), read(), read(T&), write(const T&),
// operator>>(T&), operator<<(const T&), read_nb(T&), write_nb(const T&), empty(), full(), size().
// Streams cannot be copied; pass them by reference. The depth template argument of newer AMD releases
// (hls::stream<T, N>) is not accepted, since older AMD headers lack it.
#ifndef HLSFUSE_HLS_STREAM_H
#define HLSFUSE_HLS_STREAM_H

#include <cstdlib>
#include <deque>
#include <iostream>
#include <string>

namespace hls {

template <typename T>
class stream {
 public:
  stream() : name_(next_default_name()) {}
  stream(const char* name) : name_(name) {}
  stream(const std::string& name) : name_(name) {}
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  ~stream() {
    if (!data_.empty()) {
      std::cerr << "WARNING: hls::stream '" << name_ << "' contains leftover data (" << data_.size()
                << " elements)" << std::endl;
    }
  }

  bool empty() const { return data_.empty(); }
  bool full() const { return false; }
  size_t size() const { return data_.size(); }

  T read() {
    if (data_.empty()) {
      std::cerr << "ERROR: hls::stream '" << name_ << "' is read while empty" << std::endl;
      std::abort();
    }
    T head = data_.front();
    data_.pop_front();
    return head;
  }
  void read(T& head) { head = read(); }
  void operator>>(T& head) { head = read(); }

  void write(const T& tail) { data_.push_back(tail); }
  void operator<<(const T& tail) { write(tail); }

  bool read_nb(T& head) {  // on an empty stream: false, and head = T() as in AMD's model
    if (data_.empty()) {
      head = T();
      return false;
    }
    head = read();
    return true;
  }
  bool write_nb(const T& tail) {
    write(tail);
    return true;
  }

 private:
  static std::string next_default_name() {
    static unsigned counter = 0;
    return "hls::stream." + std::to_string(++counter);
  }

  std::string name_;
  std::deque<T> data_;
};

}  // namespace hls

#endif  // HLSFUSE_HLS_STREAM_H
