# AMD gfx942/gfx950 with Debian's clang-22 + HIP 5.2 (see ../shared/TOOLCHAIN.md):
# CMake's HIP language refuses Debian's layout, so the kernels are compiled as CXX
# with explicit HIP flags.  ROCm 5.2's device libs lack oclc_isa_version_942/950.bc;
# each is one constant, generated here next to links to Debian's bitcode.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "the rocm preset without /opt/rocm needs CMAKE_CXX_COMPILER=clang++-22")
endif()
set(HY4_DEBIAN_BITCODE /usr/lib/x86_64-linux-gnu/amdgcn/bitcode CACHE PATH "Debian's ROCm device-lib bitcode")
if(NOT EXISTS ${HY4_DEBIAN_BITCODE}/ockl.bc)
  message(FATAL_ERROR "no ROCm device libs at ${HY4_DEBIAN_BITCODE} (apt install rocm-device-libs)")
endif()
set(HY4_DEVLIBS ${CMAKE_BINARY_DIR}/amdgcn-bitcode)
file(MAKE_DIRECTORY ${HY4_DEVLIBS})
file(GLOB _bc ${HY4_DEBIAN_BITCODE}/*.bc)
foreach(f IN LISTS _bc)
  get_filename_component(n ${f} NAME)
  file(CREATE_LINK ${f} ${HY4_DEVLIBS}/${n} SYMBOLIC)
endforeach()
get_filename_component(_clang_dir ${CMAKE_CXX_COMPILER} DIRECTORY)
get_filename_component(_clang_name ${CMAKE_CXX_COMPILER} NAME)
string(REPLACE "clang++" "clang" _clang_c_name ${_clang_name})
set(HY4_CLANG_C ${_clang_dir}/${_clang_c_name})
set(_isa_deps)
foreach(t IN LISTS HY4_AMDGPU_TARGETS)
  string(REGEX REPLACE "^gfx([0-9])([0-9a-f])([0-9a-f])$" "\\1\\2\\3" _n ${t})
  string(REGEX REPLACE "^gfx([0-9]+)$" "\\1" _num ${t})
  # gfx942 -> 9402, gfx950 -> 9500 (major, minor, stepping as in __oclc_ISA_version)
  string(SUBSTRING ${_num} 0 1 _maj)
  string(SUBSTRING ${_num} 1 1 _min)
  string(SUBSTRING ${_num} 2 1 _step)
  math(EXPR _ver "${_maj} * 1000 + ${_min} * 100 + 0x${_step}" OUTPUT_FORMAT DECIMAL)
  set(_c ${HY4_GEN}/oclc_isa_version_${_num}.c)
  file(WRITE ${_c} "const __attribute__((address_space(4))) unsigned int __oclc_ISA_version = ${_ver};\n")
  set(_bcout ${HY4_DEVLIBS}/oclc_isa_version_${_num}.bc)
  if(NOT EXISTS ${HY4_DEBIAN_BITCODE}/oclc_isa_version_${_num}.bc)
    add_custom_command(OUTPUT ${_bcout}
      COMMAND ${HY4_CLANG_C} -target amdgcn-amd-amdhsa -mcpu=${t} -mcode-object-version=5 -nogpulib -emit-llvm -c ${_c} -o ${_bcout}
      DEPENDS ${_c} COMMENT "ISA-version bitcode for ${t} (${_ver})")
    list(APPEND _isa_deps ${_bcout})
  endif()
endforeach()
add_custom_target(hy4_amdgcn_bitcode DEPENDS ${_isa_deps})

set(HY4_HIP_FLAGS -x hip -mcode-object-version=5 -D__AMDGCN_WAVEFRONT_SIZE=64 --rocm-path=/usr
    --rocm-device-lib-path=${HY4_DEVLIBS} -ffp-contract=off)
foreach(t IN LISTS HY4_AMDGPU_TARGETS)
  list(APPEND HY4_HIP_FLAGS --offload-arch=${t})
endforeach()
hy4_kernel_wrappers(hip.cpp HY4_KERNEL_SOURCES)
set_source_files_properties(${HY4_KERNEL_SOURCES} PROPERTIES COMPILE_OPTIONS "${HY4_HIP_FLAGS}")
add_library(hy4_kernels STATIC kernels/platform/runtime_gpu.cpp ${HY4_KERNEL_SOURCES})
add_dependencies(hy4_kernels hy4_amdgcn_bitcode)
target_compile_definitions(hy4_kernels PRIVATE __HIP_PLATFORM_AMD__)
target_link_libraries(hy4_kernels PUBLIC amdhip64)

# Device assembly of every op, for inspection: register counts and scratch (spills).
set(_asm_outputs)
foreach(op IN LISTS HY4_KERNELS)
  foreach(t IN LISTS HY4_AMDGPU_TARGETS)
    set(_s ${CMAKE_BINARY_DIR}/asm/${op}-${t}.s)
    string(REPLACE ";" " " _dummy "${HY4_HIP_FLAGS}")
    set(_flags ${HY4_HIP_FLAGS})
    list(FILTER _flags EXCLUDE REGEX "^--offload-arch=")
    add_custom_command(OUTPUT ${_s}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/asm
      COMMAND ${CMAKE_CXX_COMPILER} ${_flags} --offload-arch=${t} --cuda-device-only -S -O3 -std=c++17
              -DHY4_BACKEND_HIP -D__HIP_PLATFORM_AMD__ -I${CMAKE_SOURCE_DIR}/kernels
              ${HY4_GEN}/${op}.hip.cpp -o ${_s}
      DEPENDS ${CMAKE_SOURCE_DIR}/kernels/${op}.hip hy4_amdgcn_bitcode
      COMMENT "device assembly ${op} ${t}")
    list(APPEND _asm_outputs ${_s})
  endforeach()
endforeach()
add_custom_target(hy4_device_asm ALL DEPENDS ${_asm_outputs})
