"""Browser checks of protocol v2's beacon in the verifier (issue 40,
docs/protocol.md §6.1) against the running `battlelog up`
(browser_tests.py runs `run` below):

  - /verify, served with its Content-Security-Policy (`script-src 'self'`),
    imports the served `beacon.js` of its own build (the directory of the
    page's module script), which loads the vendored @noble/curves and
    @noble/hashes from the site: quicknet's known round verifies in
    Chromium to its known randomness, and the round it must refuse
    (`not_valid`) is refused, naming the round.

Expected values come from tests/vectors/v2.json, never from the page under
test.
"""

from __future__ import annotations

import json
from pathlib import Path

import browser_tests as bt

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO / "tests" / "vectors" / "v2.json"

# Runs in the page: the build's base URL from the page's own module script,
# then beacon.js of that build. A refusal comes back as its message.
VERIFY_IN_PAGE = """async ([round, signature]) => {
  const entry = document.querySelector('script[type="module"][src*="/assets/verifier/"]');
  const base = new URL(entry.src, location.href).href.match(/^.*\\/assets\\/verifier\\/[^/]+\\//)[0];
  const beacon = await import(base + 'beacon.js');
  try {
    const randomness = beacon.verifyBeaconRound(beacon.QUICKNET, round, signature);
    return { base, randomness: Array.from(randomness, (b) => b.toString(16).padStart(2, '0')).join('') };
  } catch (e) {
    return { base, refused: String(e.message) };
  }
}"""


def run(env: bt.Env, browser, results: bt.Results, battles) -> None:
    vectors = json.loads(VECTORS.read_text())
    known = vectors["quicknet"]["known_answer"]
    context = browser.new_context()
    try:
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        response = page.goto(f"{env.web}/verify")
        csp = (response.headers.get("content-security-policy") if response else None) or ""
        results.check("beacon: /verify is served with script-src 'self'", "script-src 'self'" in csp, f"CSP {csp!r}")

        name = f"beacon: quicknet round {known['round']} verifies in Chromium to its randomness"
        try:
            got = page.evaluate(VERIFY_IN_PAGE, [known["round"], known["signature"]])
            results.check(f"{name} (beacon.js from {got.get('base')})", got.get("randomness") == known["randomness"], f"got {got!r}")
        except Exception:
            results.crashed(name)

        for bad in vectors["quicknet"]["not_valid"]:
            name = f"beacon: quicknet refuses round {bad['round']} in Chromium"
            try:
                got = page.evaluate(VERIFY_IN_PAGE, [bad["round"], bad["signature"]])
                refused = got.get("refused") or ""
                results.check(name, f"round {bad['round']} does not verify" in refused, f"got {got!r}")
            except Exception:
                results.crashed(name)

        results.check("beacon: no console error (CSP or module loading)", not errors, "; ".join(errors))
    finally:
        context.close()
