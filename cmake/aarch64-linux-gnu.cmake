# Cross-compiling goald for arm64 (aarch64) on a Debian amd64 host, with
# Debian's gcc-aarch64-linux-gnu and the multiarch :arm64 -dev packages
# (scripts/cross-arm64 installs them and sets PKG_CONFIG_LIBDIR).
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(GOALD_CROSS_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${GOALD_CROSS_TRIPLE}-gcc)
set(CMAKE_ASM_COMPILER ${GOALD_CROSS_TRIPLE}-gcc)
find_program(CMAKE_AR ${GOALD_CROSS_TRIPLE}-ar REQUIRED)
find_program(CMAKE_NM ${GOALD_CROSS_TRIPLE}-nm REQUIRED)
find_program(CMAKE_OBJDUMP ${GOALD_CROSS_TRIPLE}-objdump REQUIRED)
find_program(CMAKE_RANLIB ${GOALD_CROSS_TRIPLE}-ranlib REQUIRED)
find_program(CMAKE_STRIP ${GOALD_CROSS_TRIPLE}-strip REQUIRED)

# Multiarch: the arm64 libraries live in /usr/lib/aarch64-linux-gnu beside
# the host's, and share /usr/include.  Programs (cmake, pkg-config) are the
# host's; the libraries are found through the target's pkg-config files
# (PKG_CONFIG_LIBDIR), which name /usr/lib/aarch64-linux-gnu.
set(CMAKE_LIBRARY_ARCHITECTURE ${GOALD_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
if(NOT DEFINED ENV{PKG_CONFIG_LIBDIR})
  set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${GOALD_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
endif()
