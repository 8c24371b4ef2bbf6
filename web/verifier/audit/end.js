// Pass 4 of verifyExport: where the export ends. A closed battle reveals
// every seed in its closing append (docs/protocol.md §1); a head the caller
// gives must be one of the export's events; the trailer (§5) must prove the
// last event is in the signed log. Failures here are reported after the
// export's last version: that is what they speak for.
import { checkTrailer } from '../transparency.js';

/** The trusted log keys from the options (verifier key texts), no duplicates. */
export function trustedLogKeys(options) {
  const keys = [...(options.logKeys ?? []), ...(options.logKey ? [options.logKey] : [])];
  return [...new Set(keys.map((k) => String(k).trim()).filter((k) => k !== ''))];
}

/** { head, trailer }: the given head's check and the trailer's, or null. */
export async function checkEnd(audit, { lines, trailer }, decodedEvents, commitments, options) {
  const last = lines[lines.length - 1].value;
  checkClosedRevealed(audit, last, decodedEvents, commitments);
  const head = checkHead(audit, lines, options.head);
  return { head, trailer: await checkTrailerOf(audit, last, trailer, options) };
}

/**
 * Closing reveals the seed, in the same append as the close: a closed battle
 * with a secret epoch is an export cut short (or a journal that skipped the
 * reveal). `cutShort`: what a judge hears is "the export stops too early",
 * not "a seed does not match" (verdict.js).
 */
function checkClosedRevealed(audit, last, decodedEvents, commitments) {
  const closedAt = decodedEvents.find((e) => e.decoded.event.type === 'BattleClosed');
  if (!closedAt) return;
  for (const c of commitments.values()) {
    if (c.revealedAt === null) {
      audit.problems.push({ version: last.version + 1, check: 'commitment', cutShort: true, message: `the battle is closed (version ${closedAt.version}) but the export ends with the seed of epoch ${c.epoch} unrevealed: it is cut short or the reveal is missing` });
    }
  }
}

function checkHead(audit, lines, given) {
  if (!given) return null;
  const last = lines[lines.length - 1];
  const hash = String(given).trim().toLowerCase();
  const match = lines.find((l) => l.value.hash.toLowerCase() === hash);
  if (match && match === last) {
    return { given: hash, check: 'ok', message: `the export ends at the head given (version ${last.value.version})` };
  }
  if (match) {
    // The forum posted an earlier head; the export continues it.
    return { given: hash, check: 'ok', message: `the head given is version ${match.value.version}; the export goes on to version ${last.value.version}` };
  }
  const head = { given: hash, check: 'bad', message: 'no event of the export has the head hash given: the export is cut short or not the battle the head is of' };
  audit.problems.push({ version: last.value.version + 1, check: 'head', cutShort: true, message: head.message });
  return head;
}

async function checkTrailerOf(audit, last, trailer, options) {
  if (trailer) {
    const result = await checkTrailer(trailer.value, { stream: audit.stream, version: last.version, hash: last.hash }, trustedLogKeys(options));
    for (const failure of result.failures) {
      audit.problems.push({ version: last.version + 1, check: 'checkpoint', what: failure.what, message: failure.message });
    }
    return result;
  }
  if (options.requireTrailer ?? trustedLogKeys(options).length > 0) {
    // A log key pinned and no trailer: the export may be cut short with its
    // trailer dropped, which nothing else here can see (the Rust audit's
    // `--log-key` fails it the same way).
    audit.problems.push({
      version: last ? last.version + 1 : 0,
      check: 'checkpoint',
      what: 'missing',
      message: 'no trailer, and a log key is pinned: the export does not show where the battle ends (docs/protocol.md §5)',
    });
  }
  return null;
}
