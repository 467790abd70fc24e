// SPDX-License-Identifier: MIT
// C++ subject for the symbolizer unit test: a member function in a namespace and a template,
// whose names must come back demangled with their parameter lists.
namespace symtest {

struct Widget {
    void grow(int slot);
};

typedef void (*record_fn)(int slot);
static record_fn recorder;
int cxx_lines[2];

__attribute__((noinline)) void Widget::grow(int slot) {
    cxx_lines[0] = __LINE__ + 1;
    recorder(slot);
    __asm__ volatile("" ::: "memory");
}

template <typename T> __attribute__((noinline)) T twice(T slot) {
    cxx_lines[1] = __LINE__ + 1;
    recorder((int)slot);
    __asm__ volatile("" ::: "memory");
    return slot + slot;
}

} // namespace symtest

// Calls recorder(slot) from Widget::grow and recorder(slot + 1) from twice<long>; returns the
// lines of those calls in lines[0..1].
extern "C" void symtest_cxx_run(void (*recorder)(int), int slot, int* lines) {
    symtest::recorder = recorder;
    symtest::Widget w;
    w.grow(slot);
    symtest::twice<long>(slot + 1);
    lines[0] = symtest::cxx_lines[0];
    lines[1] = symtest::cxx_lines[1];
}
