"""A page packed into a notebook output: an ``<iframe srcdoc>`` that unpacks itself.

# NOTE [Packed pages]
A notebook keeps every output it shows, so the page (about 0.8 MB of viewer, most of it
the graph library) travels gzipped and base64-encoded, a third of its size, and unpacks
itself in the frame: DecompressionStream (every current browser), then document.write.
"""

from __future__ import annotations

import base64
import gzip
import html
import re

__all__ = ["packed_frame", "unpack"]

_UNPACK = """<!doctype html><meta charset="utf-8"><title>gradwalk</title>
<body style="margin:0;font:14px system-ui,sans-serif">
<script type="text/plain" id="gradwalk-packed">{packed}</script>
<script>
(async () => {{
  try {{
    const text = atob(document.getElementById("gradwalk-packed").textContent.trim());
    const bytes = Uint8Array.from(text, (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    const page = await new Response(stream).text();
    document.open();
    document.write(page);
    document.close();
  }} catch (err) {{
    document.body.textContent = "gradwalk could not unpack this view here (" + err + "): " +
      "export the recording with .export('page.html') and open that file instead.";
  }}
}})();
</script>
"""


def packed_frame(page: str, title: str, height: int) -> str:
    """The ``<iframe>`` that shows ``page`` (a whole HTML page) ``height`` px high, packed."""
    packed = base64.b64encode(gzip.compress(page.encode("utf-8"), mtime=0)).decode("ascii")
    label = html.escape(title, quote=True)
    # allow-scripts without allow-same-origin: the page runs in its own opaque origin.
    return (
        f'<iframe class="gradwalk-view" title="{label}" sandbox="allow-scripts allow-popups allow-downloads" '
        f'style="width:100%;height:{int(height)}px;border:1px solid #d9dee6;border-radius:8px" '
        f'srcdoc="{_attribute(_UNPACK.format(packed=packed))}"></iframe>'
    )


def unpack(display_html: str) -> str:
    """Return the page inside a notebook display's HTML (for tests and tools; see NOTE [Packed pages])."""
    match = re.search(r"id=&quot;gradwalk-packed&quot;>([A-Za-z0-9+/=\s]+)<", display_html)
    if match is None:
        raise ValueError("not a gradwalk notebook display")
    return gzip.decompress(base64.b64decode(match.group(1))).decode("utf-8")


def _attribute(text: str) -> str:
    # Inside a double-quoted attribute only & and " need escaping; leaving < and > as they are
    # keeps a notebook's copy of the page a third smaller.
    return text.replace("&", "&amp;").replace('"', "&quot;")
