# Turns the flame graph page into a C header (a byte array, since -Wpedantic limits string
# literals to 4095 characters). Run at build time: cmake -DIN=page.html -DOUT=header.h -P this.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR len "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
       "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "// Generated from flamegraph_template.html by flamegraph_embed.cmake. Do not edit.\n"
  "static const unsigned char mr_flamegraph_html[] = {\n${bytes}0x00};\n"
  "static const unsigned long mr_flamegraph_html_len = ${len}ul;\n")
file(RENAME "${OUT}.tmp" "${OUT}")
