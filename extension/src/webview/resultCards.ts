// What a tool's card shows of its result, drawn from the data the tool gave back (common/resultData.ts), never from
// the text written for the model: the page web_fetch read, the hits of web_search, a learned API's answer line, a
// sub-agent's answer as markdown.
import type { ToolItem } from '../common/state';
import { apiAnswer, fetchedPage, searchHits, subagentAnswer } from '../common/resultData';
import { h, icon } from './dom';
import type { RenderMarkdown } from './markdown';

/**
 * The line under the card's head: a page (its title, its host, a link to it), the hits of a search, a learned
 * API's answer (method, URL, status; the URL as text, never a link: it is an API, not a page). The links are plain
 * anchors: the view's click handler sends them to the extension, which opens them with `vscode.env.openExternal`
 * (VS Code asks the user first); the webview itself never navigates.
 */
export function renderResultLine(tool: ToolItem): HTMLElement | null {
  // Styled as an answered approval's line: the footer of a card.
  const line = (testId: string, ...children: (HTMLElement | string)[]) =>
    h('div', { className: 'approval approval-answered', 'data-testid': testId }, ...children);
  const page = fetchedPage(tool.data);
  if (page) {
    return line('web-result', icon('globe'), ' ',
      h('a', { href: page.url, title: page.url, 'data-testid': 'page-link' }, page.title ?? page.url),
      ' ', h('span', { className: 'tool-duration', 'data-testid': 'page-host' }, page.host));
  }
  const hits = searchHits(tool.data);
  if (hits.length) {
    return line('web-result', h('ul', { className: 'effect-changes', 'data-testid': 'search-hits' }, ...hits.map((hit) =>
      h('li', { className: 'effect-change', 'data-testid': 'search-hit' }, icon('globe'),
        h('a', { href: hit.url, title: hit.url }, hit.title || hit.url),
        h('span', { className: 'tool-duration' }, hit.host)))));
  }
  const answer = apiAnswer(tool.data);
  if (answer) {
    return line('api-answer', icon('globe'), ' ', h('code', { 'data-testid': 'api-request' }, `${answer.method} ${answer.url}`),
      ' ', h('span', { className: 'tool-duration', 'data-testid': 'api-status', title: answer.contentType },
        `HTTP ${answer.status}`));
  }
  return null;
}

/** A sub-agent's final answer, as markdown (sanitized like every model text), in place of its raw output. */
export function renderSubagentAnswer(tool: ToolItem, markdown: RenderMarkdown): HTMLElement | null {
  const answer = subagentAnswer(tool.data);
  if (!answer) return null;
  const body = h('div', { className: 'markdown subagent-answer', 'data-testid': 'subagent-answer' });
  body.innerHTML = markdown(answer.answer);
  return body;
}
