# memreport export: every format checked by the tool that reads it (tests/exports/).
