// What a result card reads from the data a tool gave back (`toolResult.data`), and that it reads nothing from the text
// written for the model.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { apiAnswer, fetchedPage, searchHits, subagentAnswer } from '../src/common/resultData';
import type { ResultData } from '../src/protocol';

const PAGE: ResultData = { kind: 'webPage', url: 'https://docs.python.org/3/library/asyncio.html', host: 'docs.python.org',
  title: 'asyncio — Asynchronous I/O' };

describe('a web_fetch result', () => {
  it('gives the final URL, its host and the page title', () => {
    assert.deepEqual(fetchedPage(PAGE), {
      url: 'https://docs.python.org/3/library/asyncio.html', host: 'docs.python.org', title: 'asyncio — Asynchronous I/O' });
  });

  it('has no title when the page has none', () => {
    assert.deepEqual(fetchedPage({ kind: 'webPage', url: 'http://127.0.0.1:8123/page.txt', host: '127.0.0.1', title: null }),
      { url: 'http://127.0.0.1:8123/page.txt', host: '127.0.0.1', title: null });
  });

  it('is no page without its data, whatever data of another kind or a URL that is not http(s) say', () => {
    assert.equal(fetchedPage(null), null);
    assert.equal(fetchedPage(undefined), null);
    assert.equal(fetchedPage({ kind: 'webSearch', query: 'x', hits: [] }), null);
    assert.equal(fetchedPage({ kind: 'webPage', url: 'javascript:alert(1)', host: '', title: 'x' }), null);
    assert.equal(fetchedPage({ kind: 'webPage', url: 'not a url', host: '', title: 'x' }), null);
  });
});

describe('a web_search result', () => {
  it('lists each hit with its title, URL and host; a hit whose URL is not http(s) is no link', () => {
    const data: ResultData = { kind: 'webSearch', query: 'asyncio', hits: [
      { title: 'asyncio — Asynchronous I/O', url: 'https://docs.python.org/3/library/asyncio.html', host: 'docs.python.org', snippet: 's' },
      { title: '(no title)', url: 'javascript:alert(1)', host: '', snippet: '' },
      { title: 'Real Python', url: 'https://realpython.com/async-io-python/', host: 'realpython.com', snippet: '' },
    ] };
    assert.deepEqual(searchHits(data), [
      { title: 'asyncio — Asynchronous I/O', url: 'https://docs.python.org/3/library/asyncio.html', host: 'docs.python.org' },
      { title: 'Real Python', url: 'https://realpython.com/async-io-python/', host: 'realpython.com' },
    ]);
    assert.deepEqual(searchHits({ kind: 'webSearch', query: 'x', hits: [] }), []);
    assert.deepEqual(searchHits(null), []);
    assert.deepEqual(searchHits(PAGE), []);
  });
});

describe('a learned API or a sub-agent result', () => {
  it('is its own kind of data, and nothing else is', () => {
    const api: ResultData = { kind: 'apiAnswer', api: 'pets', method: 'GET', url: 'https://pets.example/v1/pets?key=[REDACTED]',
      status: 200, contentType: 'application/json' };
    const answer: ResultData = { kind: 'subagent', description: 'Find the retry', answer: 'In **src/retry.py**.' };
    assert.equal(apiAnswer(api), api);
    assert.equal(subagentAnswer(answer), answer);
    assert.equal(apiAnswer(answer), null);
    assert.equal(subagentAnswer(PAGE), null);
    assert.equal(subagentAnswer(null), null);
  });
});
