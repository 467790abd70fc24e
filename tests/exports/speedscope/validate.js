// SPDX-License-Identifier: MIT
// node validate.js FILE...: validates speedscope files against the schema shipped in the
// speedscope npm package (dist/release/file-format-schema.json) with ajv. Prints each
// file's errors; exits 1 when one is invalid, 77 when the npm packages are not installed.
"use strict";
const fs = require("fs");
const path = require("path");
let Ajv;
try {
  Ajv = require("ajv");
} catch (e) {
  console.log("SKIP: ajv is not installed (scripts/install-deps.sh --test runs npm ci here)");
  process.exit(77);
}
const schemaPath = path.join(__dirname, "node_modules/speedscope/dist/release/file-format-schema.json");
if (!fs.existsSync(schemaPath)) {
  console.log("SKIP: the speedscope npm package is not installed");
  process.exit(77);
}
const validate = new Ajv({allErrors: true, strict: false}).compile(
    JSON.parse(fs.readFileSync(schemaPath, "utf8")));
let bad = 0;
for (const file of process.argv.slice(2)) {
  const ok = validate(JSON.parse(fs.readFileSync(file, "utf8")));
  console.log((ok ? "valid: " : "INVALID: ") + file);
  if (!ok) {
    bad++;
    console.log(JSON.stringify(validate.errors, null, 1).slice(0, 4000));
  }
}
process.exit(bad ? 1 : 0);
