/**
 * A small XML tokenizer for the tests: checks that a document is well-formed (tags balanced and properly
 * nested, attributes quoted and not repeated, entities known, no stray `<` or `&`) and returns the
 * elements it saw, so tests can assert on structure without a parser dependency.
 */
export interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** Names of the open elements around this one, outermost first. */
  readonly ancestors: readonly string[];
}

const NAME = /^[A-Za-z_][\w.:-]*/;
const ENTITY = /^&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/;

/** Throws an Error saying where the document is not well-formed; otherwise lists its elements. */
export function checkXml(text: string): XmlElement[] {
  const elements: XmlElement[] = [];
  const stack: string[] = [];
  let i = 0;
  let roots = 0;
  const fail = (why: string): never => {
    const line = text.slice(0, i).split('\n').length;
    throw new Error(`not well-formed at line ${line}: ${why} near ${JSON.stringify(text.slice(i, i + 40))}`);
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '<') {
      if (text.startsWith('<!--', i)) {
        const end = text.indexOf('-->', i + 4);
        if (end < 0) fail('unterminated comment');
        i = end + 3;
      } else if (/^<!doctype /i.test(text.slice(i, i + 10))) {
        if (stack.length > 0 || roots > 0) fail('doctype after the root element');
        const end = text.indexOf('>', i);
        i = end + 1;
      } else if (text.startsWith('<?', i)) {
        const end = text.indexOf('?>', i);
        if (end < 0) fail('unterminated processing instruction');
        i = end + 2;
      } else if (text[i + 1] === '/') {
        const name = NAME.exec(text.slice(i + 2))?.[0] ?? fail('bad closing tag');
        const open = stack.pop();
        if (open !== name) fail(`</${name}> closes <${open ?? 'nothing'}>`);
        i += 2 + name.length;
        while (text[i] === ' ' || text[i] === '\n') i++;
        if (text[i] !== '>') fail('bad closing tag');
        i++;
      } else {
        const name = NAME.exec(text.slice(i + 1))?.[0] ?? fail('bad tag name');
        if (stack.length === 0) {
          roots++;
          if (roots > 1) fail('more than one root element');
        }
        i += 1 + name.length;
        const attributes: Record<string, string> = {};
        for (;;) {
          while (/\s/.test(text[i] ?? '')) i++;
          if (text[i] === '>' || text.startsWith('/>', i)) break;
          const attr = NAME.exec(text.slice(i))?.[0] ?? fail(`bad attribute in <${name}>`);
          if (attr in attributes) fail(`attribute ${attr} repeated in <${name}>`);
          i += attr.length;
          if (text[i] !== '=') fail(`attribute ${attr} without a value`);
          const quote = text[i + 1];
          if (quote !== '"' && quote !== "'") fail(`attribute ${attr} not quoted`);
          const end = text.indexOf(quote as string, i + 2);
          if (end < 0) fail('unterminated attribute');
          const value = text.slice(i + 2, end);
          if (value.includes('<')) fail(`'<' in attribute ${attr}`);
          checkEntities(value, fail);
          attributes[attr] = value;
          i = end + 1;
        }
        elements.push({ name, attributes, ancestors: [...stack] });
        if (text[i] === '>') {
          stack.push(name);
          i++;
        } else {
          i += 2;
        }
      }
    } else {
      if (stack.length === 0 && !/\s/.test(c as string)) fail('text outside the root element');
      if (c === '&' && !ENTITY.test(text.slice(i, i + 12))) fail('bare &');
      if (c === '>' && stack.length === 0) fail('stray >');
      i++;
    }
  }
  if (stack.length > 0) throw new Error(`not well-formed: <${stack.join('> <')}> never closed`);
  if (roots !== 1) throw new Error('not well-formed: no root element');
  return elements;
}

function checkEntities(value: string, fail: (why: string) => never): void {
  for (let j = value.indexOf('&'); j >= 0; j = value.indexOf('&', j + 1)) {
    if (!ENTITY.test(value.slice(j, j + 12))) fail('bare & in an attribute');
  }
}
