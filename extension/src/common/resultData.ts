// What a tool's result card draws, from the data the tool gave back (`toolResult.data`, server/sunwell/wire/results.py):
// the page web_fetch read, the hits of web_search, a learned API's answer, a sub-agent's answer. Never from the text
// written for the model: a result without data (an error, a redirect to another host, an older engine) draws no card
// of its own and shows as any tool's output.
import type { ApiAnswer, ResultData, SubagentAnswer } from '../protocol';

export interface FetchedPage {
  url: string;
  /** The host as the engine normalised it (IDNA: punycode), without the port, as approval cards show it. */
  host: string;
  title: string | null;
}

export interface SearchHit {
  title: string;
  url: string;
  host: string;
}

/** Only an http(s) URL may become a link, whatever the data says. */
function isWebUrl(text: string): boolean {
  try {
    const { protocol } = new URL(text);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

export function fetchedPage(data: ResultData | null | undefined): FetchedPage | null {
  if (data?.kind !== 'webPage' || !isWebUrl(data.url)) return null;
  return { url: data.url, host: data.host, title: data.title || null };
}

/** The hits of a web_search result that can be links. */
export function searchHits(data: ResultData | null | undefined): SearchHit[] {
  if (data?.kind !== 'webSearch') return [];
  return data.hits.filter((hit) => isWebUrl(hit.url)).map(({ title, url, host }) => ({ title, url, host }));
}

export function apiAnswer(data: ResultData | null | undefined): ApiAnswer | null {
  return data?.kind === 'apiAnswer' ? data : null;
}

export function subagentAnswer(data: ResultData | null | undefined): SubagentAnswer | null {
  return data?.kind === 'subagent' ? data : null;
}
