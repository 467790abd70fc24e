// SPDX-License-Identifier: MIT
// The flame graph page: the template (flamegraph_template.html, compiled in) with the
// graph's data put in place of its placeholder.
#include "flamegraph_page.h"

#include "flamegraph_data.h"
#include "flamegraph_html.h"
#include "json.h"

#include <errno.h>
#include <string.h>

#define DATA_PLACEHOLDER "@MEMTRACE_FLAMEGRAPH_DATA@"

int mr_flamegraph_page_write(FILE* fp, const mr_flame_tree* g, mt_capture* cap,
                             const mr_flamegraph_view* view) {
    const char* page = (const char*)mr_flamegraph_html;
    const char* at = strstr(page, DATA_PLACEHOLDER);
    if (!at)
        return -EPROTO;
    json_t* data = mr_flamegraph_data_build(g, cap, view);
    if (!data)
        return -ENOMEM;
    fwrite(page, 1, (size_t)(at - page), fp);
    // With < > & escaped no name can end the script element the data sits in, nor open
    // an HTML comment that would swallow the rest of the page ("<!--<script>").
    int rc = mr_json_dump_html(data, fp);
    json_decref(data);
    if (rc)
        return -EIO;
    const char* rest = at + strlen(DATA_PLACEHOLDER);
    fwrite(rest, 1, mr_flamegraph_html_len - (size_t)(rest - page), fp);
    return 0;
}
