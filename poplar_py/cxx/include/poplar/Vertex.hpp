// poplar-py's stand-in for Poplar's <poplar/Vertex.hpp>.
//
// The vertex base classes and field types, laid out as poplar-py's engine writes vertex state:
// an edge to one element is a pointer, a vector is a pointer and its number of elements (whatever
// its VectorLayout: the simulator keeps every size, so bounds are checked for ONE_PTR vectors
// too), a vector list is a pointer to rows of (pointer, size) and its number of rows. Element
// access checks the index in checked mode (the default) and fails the vertex naming the field.
#pragma once

#include <cstddef>
#include <type_traits>

#include <poplar/HalfFloat.hpp>
#include <poplar/Loops.hpp>
#include <poplar_py/hooks.h>

#define POPLAR_PY_FREE(n) __poplar_py_cycles(-(n))

namespace poplar {

enum class VectorLayout { ONE_PTR, SCALED_PTR32, SCALED_PTR64, SCALED_PTR128, COMPACT_PTR, SPAN, SHORT_SPAN };
enum class VectorListLayout { ONE_PTR, COMPACT_DELTAN, DELTAN, DELTANELEMENTS, SCALED_PTR32_DELTAN };

// Rows of a vector list as the engine writes them (a poplar-py detail).
struct ListEntry {
  unsigned long ptr;
  long size;
};

class Vertex {
public:
  static constexpr unsigned numWorkers() { return 1; }
};

class MultiVertex {
public:
  static constexpr unsigned numWorkers() { return 6; }
};

class SupervisorVertex {
public:
  static constexpr unsigned numWorkers() { return 6; }
};

// A contiguous vector of T: the field type Vector<T>, and the rows of vector lists.
template <typename T, VectorLayout L = VectorLayout::SPAN, unsigned Align = alignof(T),
          bool Interleaved = false>
class Vector {
  T *ptr_;
  unsigned long size_;

public:
  using value_type = T;
  T &operator[](unsigned long i) const {
    POPLAR_PY_CHECK(this, i, size_);
    POPLAR_PY_FREE(1);
    return ptr_[i];
  }
  // unsigned, as size_t is on the IPU: loops over unsigned indices then have a known trip count
  unsigned size() const {
    POPLAR_PY_FREE(1);
    return static_cast<unsigned>(size_);
  }
  bool empty() const { return size() == 0; }
  T *data() const {
    POPLAR_PY_FREE(1);
    return ptr_;
  }
  T *begin() const { return data(); }
  T *end() const {
    POPLAR_PY_FREE(2);
    return ptr_ + size_;
  }
  template <typename U> U *reinterpret() const { return reinterpret_cast<U *>(data()); }
};

namespace detail {

// Read access to one element through the pointer the engine wrote.
template <typename T> class ScalarRef {
protected:
  T *ptr_;

public:
  T &get() const {
    POPLAR_PY_FREE(1);
    return *ptr_;
  }
};

// A row of a vector list: a pointer, its size and the list it belongs to (for error messages).
template <typename T> class Row {
  T *ptr_;
  unsigned long size_;
  const void *list_;

public:
  Row(T *p, unsigned long n, const void *list) : ptr_(p), size_(n), list_(list) {}
  T &operator[](unsigned long i) const {
    POPLAR_PY_CHECK(list_, i, size_);
    return ptr_[i];
  }
  unsigned size() const { return static_cast<unsigned>(size_); }
  T *data() const { return ptr_; }
  T *begin() const { return ptr_; }
  T *end() const { return ptr_ + size_; }
};

// A list of vectors: Vector<Input<Vector<T>>>, VectorList<T>, Input<VectorList<T>>.
template <typename T> class List {
  const ListEntry *rows_;
  unsigned long size_;

public:
  Row<T> operator[](unsigned long i) const {
    POPLAR_PY_CHECK(this, i, size_);
    POPLAR_PY_FREE(3);
    const ListEntry &e = rows_[i];
    return Row<T>(static_cast<T *>(__poplar_py_row(e.ptr)), (unsigned long)e.size, this);
  }
  unsigned size() const {
    POPLAR_PY_FREE(1);
    return static_cast<unsigned>(size_);
  }
};

template <typename T> struct Field {
  static constexpr bool is_vector = false;
};
template <typename T, VectorLayout L, unsigned A, bool I> struct Field<Vector<T, L, A, I>> {
  static constexpr bool is_vector = true;
};

} // namespace detail

// Edges. Input<T> reads one element, Output<T> writes it, InOut<T> both; Input<Vector<T>> and
// friends are vectors of const or writable elements.
template <typename T> class Input : public detail::ScalarRef<const T> {
public:
  operator const T &() const { return this->get(); }
  const T &operator*() const { return this->get(); }
  const T *operator->() const { return &this->get(); }
};

template <typename T> class Output : public detail::ScalarRef<T> {
public:
  operator T &() const { return this->get(); }
  T &operator*() const { return this->get(); }
  T *operator->() const { return &this->get(); }
  const Output &operator=(const T &v) const {
    this->get() = v;
    return *this;
  }
  const Output &operator=(const Output &o) const {
    this->get() = o.get();
    return *this;
  }
  template <typename U> const Output &operator+=(const U &v) const { this->get() += v; return *this; }
  template <typename U> const Output &operator-=(const U &v) const { this->get() -= v; return *this; }
  template <typename U> const Output &operator*=(const U &v) const { this->get() *= v; return *this; }
  template <typename U> const Output &operator/=(const U &v) const { this->get() /= v; return *this; }
};

template <typename T> class InOut : public Output<T> {
public:
  using Output<T>::operator=;
};

template <typename T, VectorLayout L, unsigned A, bool I>
class Input<Vector<T, L, A, I>> : public Vector<const T, L, A, I> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class Output<Vector<T, L, A, I>> : public Vector<T, L, A, I> {};
template <typename T, VectorLayout L, unsigned A, bool I>
class InOut<Vector<T, L, A, I>> : public Vector<T, L, A, I> {};

template <typename T, VectorListLayout L = VectorListLayout::DELTANELEMENTS, unsigned Align = alignof(T),
          bool Interleaved = false>
class VectorList : public detail::List<T> {};

template <typename T, VectorListLayout L, unsigned A, bool I>
class Input<VectorList<T, L, A, I>> : public detail::List<const T> {};
template <typename T, VectorListLayout L, unsigned A, bool I>
class Output<VectorList<T, L, A, I>> : public detail::List<T> {};
template <typename T, VectorListLayout L, unsigned A, bool I>
class InOut<VectorList<T, L, A, I>> : public detail::List<T> {};

// Vector<Input<Vector<T>>>: a list of vectors; Vector<Input<T>>: a vector of single elements.
template <typename T, VectorLayout L, unsigned A, bool I, VectorLayout L2, unsigned A2, bool I2>
class Vector<Input<Vector<T, L, A, I>>, L2, A2, I2> : public detail::List<const T> {};
template <typename T, VectorLayout L, unsigned A, bool I, VectorLayout L2, unsigned A2, bool I2>
class Vector<Output<Vector<T, L, A, I>>, L2, A2, I2> : public detail::List<T> {};
template <typename T, VectorLayout L, unsigned A, bool I, VectorLayout L2, unsigned A2, bool I2>
class Vector<InOut<Vector<T, L, A, I>>, L2, A2, I2> : public detail::List<T> {};
template <typename T, VectorLayout L2, unsigned A2, bool I2>
class Vector<Input<T>, L2, A2, I2> : public Vector<const T, L2, A2, I2> {};
template <typename T, VectorLayout L2, unsigned A2, bool I2>
class Vector<Output<T>, L2, A2, I2> : public Vector<T, L2, A2, I2> {};
template <typename T, VectorLayout L2, unsigned A2, bool I2>
class Vector<InOut<T>, L2, A2, I2> : public Vector<T, L2, A2, I2> {};

} // namespace poplar
