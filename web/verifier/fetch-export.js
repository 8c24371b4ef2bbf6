// The battle page's export, read from the server (issue 39: the page no
// longer carries it; `export.jsonl` serves the same text, compressed, to the
// same visitors, its share key in the URL). Used by the worker, and by the
// page itself when no worker can start.

/** The export's text at `url`; an ExportFetchError when the server will not give it. */
export async function fetchExport(url) {
  let response;
  try {
    response = await fetch(url, { credentials: 'same-origin', headers: { Accept: 'application/x-ndjson' } });
  } catch (error) {
    throw new ExportFetchError(`the battle's export could not be read: ${error && error.message ? error.message : error}`);
  }
  if (!response.ok) throw new ExportFetchError(`the battle's export could not be read: HTTP ${response.status}`);
  return response.text();
}

/** The export could not be read (a network error, or the server refused). */
export class ExportFetchError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ExportFetchError';
  }
}
