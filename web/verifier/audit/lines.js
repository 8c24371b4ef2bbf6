// An export's text read as lines (docs/protocol.md §4–§5): one JSON object
// per event, then at most one trailer (the line without a version). A text
// that is not such a file is an ExportFormatError, never a failed battle.

/** The text is not an export at all (as opposed to an export that fails). */
export class ExportFormatError extends Error {
  constructor(line, message) {
    super(line ? `line ${line}: ${message}` : message);
    this.name = 'ExportFormatError';
    this.line = line;
  }
}

/** The export's event lines ({ line, value }) and its trailer (or null). */
export function parseExportLines(text) {
  if (typeof text !== 'string') throw new ExportFormatError(0, 'an export is text');
  const lines = [];
  let trailer = null;
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    if (trailer) throw new ExportFormatError(line, 'a line follows the trailer (the line without a version)');
    const value = parseLine(line, raw);
    if (!('version' in value)) {
      // §5: the export's last line, without a version, is its trailer.
      trailer = { line, value };
      return;
    }
    checkEventLine(line, value);
    lines.push({ line, value });
  });
  if (lines.length === 0) throw new ExportFormatError(0, 'the export holds no event');
  return { lines, trailer };
}

function parseLine(line, raw) {
  let value;
  try {
    value = JSON.parse(raw);
  } catch (e) {
    throw new ExportFormatError(line, `not JSON: ${e.message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ExportFormatError(line, 'not a JSON object');
  return value;
}

function checkEventLine(line, value) {
  for (const [name, kind] of [['stream', 'string'], ['hash', 'string'], ['record', 'string']]) {
    if (typeof value[name] !== kind) throw new ExportFormatError(line, `field ${name} is missing or not a ${kind}`);
  }
  if (!Number.isSafeInteger(value.version) || value.version < 0) {
    throw new ExportFormatError(line, 'field version is not a non-negative integer');
  }
}
