// A tiny element builder: the webview's DOM is built from text nodes and attributes, never from strings of
// HTML, except for sanitized markdown.
type Child = Node | string | null | undefined | false;

export function h(tag: string, attrs: Record<string, string | boolean | undefined> = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    el.setAttribute(name === 'className' ? 'class' : name, value === true ? '' : value);
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return el;
}

export function icon(name: string, extra = ''): HTMLElement {
  return h('span', { className: `codicon codicon-${name} ${extra}`.trim(), 'aria-hidden': 'true' });
}
