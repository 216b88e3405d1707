// What a web tool's result says, for its card: the page web_fetch read (its first lines `URL: ` and `Title: `,
// server/sunwell/tools/handlers/web.py) and the hits of web_search. A result in another shape (an error, a redirect
// to another host, an older engine) parses to null and the card shows it as any tool's output.

export interface FetchedPage {
  url: string;
  /** The host as the URL parser normalises it (IDNA: punycode), without the port, as approval cards show it. */
  host: string;
  title: string | null;
}

export interface SearchHit {
  title: string;
  url: string;
  host: string;
}

/** An http(s) URL and its host, or null: only such URLs may become links. */
function webUrl(text: string): { url: string; host: string } | null {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    return null;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return null;
  return { url: text, host: parsed.hostname };
}

export function fetchedPage(output: string | null): FetchedPage | null {
  if (!output) return null;
  const [first, second] = output.split('\n', 2);
  if (!first.startsWith('URL: ')) return null;
  const target = webUrl(first.slice('URL: '.length).trim());
  if (!target) return null;
  const title = second?.startsWith('Title: ') ? second.slice('Title: '.length).trim() || null : null;
  return { ...target, title };
}

/** The hits of a web_search result: `N. title` then the URL on the next line, indented. */
export function searchHits(output: string | null): SearchHit[] {
  const hits: SearchHit[] = [];
  for (const m of (output ?? '').matchAll(/^\d+\. (.*)\n {3}(\S+)$/gm)) {
    const target = webUrl(m[2]);
    if (target) hits.push({ title: m[1].trim(), ...target });
  }
  return hits;
}
