# regressions/corpus_classes.cmake (the regression.corpus_names_every_class test):
# every known upstream failure class has at least one case file in cases/ that names
# it in its comments.  cmake -DCASES=<dir> -P corpus_classes.cmake
file(GLOB files ${CASES}/*.case)
set(all "")
foreach(f IN LISTS files)
  file(READ ${f} text)
  string(APPEND all "${text}\n")
endforeach()
set(classes
  "graph-padded rows holding NaN that leak into valid rows under replay"
  "invalid token index (-1, a padded or dropped slot) handled as 0"
  "empty-row 0/0 NaN that decoded as repeated tokens"
  "sorter that ignores the row stride"
  "top-k ties decided by lane instead of expert id"
  "all selected weights underflowing (the sum floor)"
  "a -inf sink on an empty row"
  "a +inf lse marking an empty row"
  "bf16 conversion turning NaN into inf"
  "warp collective written for 32 lanes that breaks at 64")
set(missing 0)
foreach(c IN LISTS classes)
  string(FIND "${all}" "${c}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "no regression case names the upstream failure class: ${c}")
    math(EXPR missing "${missing} + 1")
  endif()
endforeach()
list(LENGTH classes n)
list(LENGTH files nf)
message(STATUS "regression corpus: ${nf} case files; ${n} upstream failure classes, ${missing} without a case")
