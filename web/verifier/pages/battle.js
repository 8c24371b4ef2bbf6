// The battle page's own check (battlelog-web's /battles/{id}): verifies the
// export the server embedded in the page with the independent verifier,
// then marks the page by the DOM contract (dom.js). The server's word is
// not trusted: the embedded text is the same export `export.jsonl` serves,
// and every event and roll on the page must be backed by it.
//
// battlelog-web inlines verify.js, dom.js and this file into one module
// script (a page saved to disk keeps working), dropping the imports below.
import { verifyExport } from '../verify.js';
import { applyError, applyReport } from '../dom.js';

async function checkBattlePage() {
  const embedded = document.getElementById('battle-export');
  // The head the server says the battle is at: an export cut short then fails.
  const head = document.body.getAttribute('data-head') || undefined;
  try {
    const report = await verifyExport(embedded.textContent, { head });
    const list = document.getElementById('client-problems');
    for (const problem of report.problems) {
      const item = document.createElement('li');
      const link = document.createElement('a');
      link.href = `#v${problem.version}`;
      link.textContent = `v${problem.version}`;
      item.append(link, ` ${problem.check}: ${problem.message}`);
      list.append(item);
    }
    applyReport(document, report);
  } catch (error) {
    applyError(document, error);
  }
}

checkBattlePage();
