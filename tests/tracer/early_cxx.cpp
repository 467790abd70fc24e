// SPDX-License-Identifier: MIT
// A C++ program: libstdc++ allocates its exception emergency pool in its constructor, before
// libmemtrace.so's runs. check_early.py compares its counts with glibc's memusage.
#include <string>
#include <vector>

int main() {
    std::vector<std::string> v;
    for (int i = 0; i < 1000; i++)
        v.push_back(std::string(100 + i % 7, 'x'));
    return v.size() == 1000 ? 0 : 1;
}
