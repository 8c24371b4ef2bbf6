// A small stand-in for a Document, enough for dom.js and the pages' code
// under Node: elements with attributes, classes, children and text, and
// querySelectorAll/querySelector/closest for the simple selectors they use
// (`[attr]`, `[attr="value"]`, `.class`, `tag`). No jsdom: what dom.js may
// call is exactly what is here.
export class FakeElement {
  constructor(tag, attributes = {}, ownerDocument = null) {
    this.tagName = tag.toUpperCase();
    this.attributes = {};
    this.children = [];
    this.parentElement = null;
    this.text = '';
    this.ownerDocument = ownerDocument;
    for (const [k, v] of Object.entries(attributes)) this.setAttribute(k, v);
    const self = this;
    this.classList = {
      contains: (c) => (self.getAttribute('class') ?? '').split(/\s+/).includes(c),
      add: (c) => self.classList.contains(c) || self.setAttribute('class', `${self.getAttribute('class') ?? ''} ${c}`.trim()),
      remove: (c) => self.setAttribute('class', (self.getAttribute('class') ?? '').split(/\s+/).filter((x) => x !== c).join(' ')),
    };
  }
  getAttribute(name) {
    return name in this.attributes ? this.attributes[name] : null;
  }
  setAttribute(name, value) {
    this.attributes[name] = String(value);
  }
  removeAttribute(name) {
    delete this.attributes[name];
  }
  get id() {
    return this.getAttribute('id') ?? '';
  }
  get textContent() {
    return this.text + this.children.map((c) => (typeof c === 'string' ? c : c.textContent)).join('');
  }
  set textContent(value) {
    this.text = String(value);
    for (const c of this.children) if (typeof c !== 'string') c.parentElement = null;
    this.children = [];
  }
  append(...nodes) {
    for (const n of nodes) {
      if (typeof n !== 'string') n.parentElement = this;
      this.children.push(n);
    }
  }
  prepend(...nodes) {
    for (const n of nodes) if (typeof n !== 'string') n.parentElement = this;
    this.children.unshift(...nodes);
  }
  replaceChildren(...nodes) {
    this.textContent = '';
    this.append(...nodes);
  }
  get elements() {
    return this.children.filter((c) => typeof c !== 'string');
  }
  *descendants() {
    for (const c of this.elements) {
      yield c;
      yield* c.descendants();
    }
  }
  matches(selector) {
    return selector.split(',').some((one) => matchesOne(this, one.trim()));
  }
  querySelectorAll(selector) {
    return [...this.descendants()].filter((e) => e.matches(selector));
  }
  querySelector(selector) {
    return this.querySelectorAll(selector)[0] ?? null;
  }
  closest(selector) {
    for (let e = this; e; e = e.parentElement) if (e.matches(selector)) return e;
    return null;
  }
}

function matchesOne(el, selector) {
  let m = /^\[([\w-]+)(?:="([^"]*)")?\]$/.exec(selector);
  if (m) return m[2] === undefined ? el.getAttribute(m[1]) !== null : el.getAttribute(m[1]) === m[2];
  m = /^([a-z]*)\.([\w-]+)$/.exec(selector);
  if (m) return (!m[1] || el.tagName === m[1].toUpperCase()) && el.classList.contains(m[2]);
  if (/^[a-z]+$/.test(selector)) return el.tagName === selector.toUpperCase();
  throw new Error(`the fake DOM does not know the selector ${selector}`);
}

export class FakeDocument {
  constructor(lang = 'en') {
    this.documentElement = new FakeElement('html', { lang }, this);
    this.body = new FakeElement('body', { 'data-audit': 'pending', 'data-roller-key': 'pending' }, this);
    this.documentElement.append(this.body);
  }
  createElement(tag) {
    return new FakeElement(tag, {}, this);
  }
  querySelectorAll(selector) {
    return this.documentElement.querySelectorAll(selector);
  }
  querySelector(selector) {
    return this.documentElement.querySelector(selector);
  }
  getElementById(id) {
    return this.documentElement.querySelectorAll('[id]').find((e) => e.id === id) ?? null;
  }
}

/** An element with attributes and children (strings are text). */
export function h(doc, tag, attributes = {}, ...children) {
  const el = doc.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, v);
  el.append(...children);
  return el;
}
