# cmake -DINPUT=file -DOUTPUT=file.cc -DNAMESPACE=ns -DFUNCTION=Name -P EmbedText.cmake
# Writes a C++ source whose function `std::string_view <FUNCTION>()` returns the input file's
# bytes (a raw string literal; the file must not contain the delimiter `)reprise_embed"`).
file(READ "${INPUT}" content)
string(FIND "${content}" ")reprise_embed\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter )reprise_embed\"")
endif()
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedText.cmake; do not edit.\n"
  "#include <string_view>\n"
  "namespace ${NAMESPACE} {\n"
  "std::string_view ${FUNCTION}() {\n"
  "  static constexpr std::string_view kText = R\"reprise_embed(${content})reprise_embed\";\n"
  "  return kText;\n"
  "}\n"
  "}  // namespace ${NAMESPACE}\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
