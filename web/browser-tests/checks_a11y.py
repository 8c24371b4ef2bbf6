"""Accessibility of the judges' pages, checked by axe-core (vendored from
npm in vendor/axe-core): the battle page of a demo battle and /verify, each
in English and in Russian, light and dark, at desktop and phone width, have no violation axe rates serious or critical.

axe runs after the in-page verifier has given its verdict, so what is
checked is the page as a judge reads it, marks and check list included.
The pages' Content-Security-Policy admits only their own scripts, so the
browser context that injects axe bypasses it (nothing else does).
"""

from __future__ import annotations

from pathlib import Path

import browser_tests as bt

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
SERIOUS = ("serious", "critical")


def violations(page) -> list[str]:
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        """async () => {
            const result = await axe.run(document, { resultTypes: ['violations'] });
            return result.violations.map(v => ({
                id: v.id, impact: v.impact,
                nodes: v.nodes.slice(0, 3).map(n => n.target.join(' ')),
            }));
        }"""
    )
    return [f"{v['id']} ({v['impact']}) at {v['nodes']}" for v in found if v["impact"] in SERIOUS]


def run(env: bt.Env, browser, results: bt.Results, battles: list[tuple[str, str]]) -> None:
    pages = [(f"/verify?lang={lang}", f"{env.web}/verify?lang={lang}", False) for lang in ("en", "ru")]
    if battles:
        _, link = battles[0]
        pages += [(f"battle page ?lang={lang}", bt.with_query(link, lang=lang), True) for lang in ("en", "ru")]
    for name, url, verdict in pages:
        for width, scheme in ((1280, "light"), (390, "light"), (1280, "dark")):
            label = f"axe: {name} at {width} px, {scheme}, has no serious or critical violation"
            try:
                context = browser.new_context(
                    bypass_csp=True, color_scheme=scheme, viewport={"width": width, "height": 900}
                )
                page = context.new_page()
                page.goto(url)
                if verdict:
                    bt.wait_verdict(page)
                found = violations(page)
                results.check(label, not found, "; ".join(found))
                context.close()
            except Exception:
                results.crashed(label)
