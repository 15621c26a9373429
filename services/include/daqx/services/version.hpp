// Which daqx a program or library is: what every program's --version prints (and what a build-info metric
// can carry), fixed when the build tree was configured.
#pragma once

namespace daqx {

// The project's version, from CMake's project(VERSION): "0.1.0".
const char* version() noexcept;

// What `git describe --tags --always --dirty` said about the source tree when the build was configured
// ("v0.1.0-12-g2a0447e", "2a0447e-dirty"), or "" when it was not a git checkout or git was missing.
const char* git_description() noexcept;

// The line after a program's name in its --version: "0.1.0 (git 2a0447e)", or "0.1.0" without git.
const char* version_line() noexcept;

}  // namespace daqx
