// SPDX-License-Identifier: MIT
// Found before the system's jansson.h by the layers that must not build JSON (base/,
// model/, cmd/; reporter/CMakeLists.txt): JSON documents are made in render/ only
// (render/json.h), so a model that needs a name table or a command that wants JSON output
// uses the model's structures and a report renderer instead (docs/architecture.md).
#error "jansson is used in reporter/render/ only: see docs/architecture.md (layers)"
