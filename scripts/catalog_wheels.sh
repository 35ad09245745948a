# Sourced by the catalog's device scripts (scripts/h200_s19_chain1.sh, scripts/h200_s27_call1.sh), from the
# repository root: every small peer wheel (.whl, .whl-peers/c1, .whl-peers/c3) into /tmp/site in ONE pip command,
# FlashInfer's prebuilt modules into /tmp/fi-cache; with C3Q=1 also quack's small wheels (.whl-peers/c3q) into
# /tmp/site3, merged into /tmp/site with `cp -r` (a second `pip --target --upgrade` into /tmp/site would replace
# folders the first filled: session 18). SKIP_INSTALL=1: the first part is skipped where /tmp/site and /tmp/fi-cache
# are filled already (a second script on the same machine). Logs in $OUT/install.txt, $OUT/c3q_install.txt.
if [ "${SKIP_INSTALL:-0}" = 1 ] && [ -d /tmp/site/flashinfer ] && [ -d /tmp/fi-cache ]; then
  echo "wheels already in /tmp/site (SKIP_INSTALL=1)"
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    .whl/*.whl .whl-peers/c1/*.whl .whl-peers/c3/*.whl > "$OUT/install.txt" 2>&1 || echo "install FAILED (install.txt)"
  rm -rf /tmp/fi-cache && cp -r .kernelcraft/flashinfer-cache /tmp/fi-cache
fi
if [ "${C3Q:-0}" = 1 ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site3 .whl-peers/c3q/*.whl \
    > "$OUT/c3q_install.txt" 2>&1 && cp -r /tmp/site3/. /tmp/site/ && echo "c3q installed into /tmp/site" \
    || echo "c3q install FAILED (c3q_install.txt)"
fi
