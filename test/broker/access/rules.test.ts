import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/load.js';
import type { RuleConfig } from '../../../src/config/types.js';
import { compileRules, type Rules } from '../../../src/broker/access/rules.js';

type Table = 'read' | 'write';

/** One case: `can(table, client, 'ep/ver/id')` must equal `allowed`. */
interface AccessCase {
  readonly name: string;
  readonly table: Table;
  readonly client: string;
  readonly channel: string;
  readonly allowed: boolean;
}

function can(rules: Rules, table: Table, client: string, channel: string): boolean {
  const [endpoint = '', version = '', id = ''] = channel.split('/');
  return table === 'read'
    ? rules.canRead(client, endpoint, version, id)
    : rules.canWrite(client, endpoint, version, id);
}

function describeAccess(title: string, rules: Rules, cases: readonly AccessCase[]): void {
  describe(title, () => {
    it.each(cases)('$name', ({ table, client, channel, allowed }) => {
      expect(can(rules, table, client, channel)).toBe(allowed);
    });
  });
}

function configError(run: () => unknown): ConfigError {
  try {
    run();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describeAccess('no rules key: everything allowed (compat)', compileRules(undefined, 'deny'), [
  { name: 'any client reads a concrete id', table: 'read', client: 'anyone', channel: 'orders/v1/42', allowed: true },
  { name: 'any client reads *', table: 'read', client: 'anyone', channel: 'orders/v1/*', allowed: true },
  { name: 'any client writes a concrete id', table: 'write', client: 'anyone', channel: 'orders/v1/42', allowed: true },
  { name: 'any client writes *', table: 'write', client: 'anyone', channel: 'orders/v1/*', allowed: true },
  { name: 'a prototype-named client', table: 'write', client: '__proto__', channel: 'constructor/v1/toString', allowed: true },
]);

describe('no rules key: nothing reserved, any name may auto-register', () => {
  const rules = compileRules(undefined, 'deny');
  it('reserves nothing', () => expect(rules.isReserved('orders', 'v1', '42')).toBe(false));
  it('lets any name auto-register', () => expect(rules.matchesAnyRule('anyone')).toBe(true));
});

describeAccess(
  'pattern forms (deny by default)',
  compileRules(
    [
      { client: 'one', read: ['orders/v1/42'], write: ['orders/v1/43'] },
      { client: 'queue', read: ['orders/v1/*'], write: ['orders/v2/*'] },
      { client: 'endpoint', read: ['orders/*'], write: ['invoices/*'] },
    ],
    'deny',
  ),
  [
    { name: 'ep/ver/id grants read of that id', table: 'read', client: 'one', channel: 'orders/v1/42', allowed: true },
    { name: 'ep/ver/id refuses another id', table: 'read', client: 'one', channel: 'orders/v1/43', allowed: false },
    { name: 'ep/ver/id refuses *', table: 'read', client: 'one', channel: 'orders/v1/*', allowed: false },
    { name: 'ep/ver/id refuses another version', table: 'read', client: 'one', channel: 'orders/v2/42', allowed: false },
    { name: 'ep/ver/id grants write of that id', table: 'write', client: 'one', channel: 'orders/v1/43', allowed: true },
    { name: 'ep/ver/id write refuses a send to *', table: 'write', client: 'one', channel: 'orders/v1/*', allowed: false },
    { name: 'ep/ver/* grants read of any id', table: 'read', client: 'queue', channel: 'orders/v1/anything', allowed: true },
    { name: 'ep/ver/* grants read of *', table: 'read', client: 'queue', channel: 'orders/v1/*', allowed: true },
    { name: 'ep/ver/* refuses another version', table: 'read', client: 'queue', channel: 'orders/v2/1', allowed: false },
    { name: 'ep/ver/* refuses another endpoint', table: 'read', client: 'queue', channel: 'invoices/v1/1', allowed: false },
    { name: 'ep/ver/* grants a send to *', table: 'write', client: 'queue', channel: 'orders/v2/*', allowed: true },
    { name: 'ep/* grants read of any version and id', table: 'read', client: 'endpoint', channel: 'orders/v9.1/7', allowed: true },
    { name: 'ep/* grants read of *', table: 'read', client: 'endpoint', channel: 'orders/v1/*', allowed: true },
    { name: 'ep/* refuses another endpoint', table: 'read', client: 'endpoint', channel: 'order/v1/7', allowed: false },
    { name: 'ep/* grants a send to *', table: 'write', client: 'endpoint', channel: 'invoices/v3/*', allowed: true },
  ],
);

describeAccess(
  'read and write are separate tables',
  compileRules(
    [
      { client: 'reader', read: ['orders/*'] },
      { client: 'writer', write: ['orders/*'] },
    ],
    'deny',
  ),
  [
    { name: 'a read grant grants read', table: 'read', client: 'reader', channel: 'orders/v1/1', allowed: true },
    { name: 'a read grant does not grant write', table: 'write', client: 'reader', channel: 'orders/v1/1', allowed: false },
    { name: 'a write grant grants write', table: 'write', client: 'writer', channel: 'orders/v1/1', allowed: true },
    { name: 'a write grant does not grant read', table: 'read', client: 'writer', channel: 'orders/v1/1', allowed: false },
  ],
);

describeAccess(
  'client patterns: exact, prefix, all',
  compileRules(
    [
      { client: 'billing', read: ['invoices/v1/*'] },
      { client: 'shop-*', read: ['orders/v1/*'] },
      { client: '*', read: ['public/v1/*'] },
    ],
    'deny',
  ),
  [
    { name: 'an exact name matches itself', table: 'read', client: 'billing', channel: 'invoices/v1/1', allowed: true },
    { name: 'an exact name is not a prefix', table: 'read', client: 'billing2', channel: 'invoices/v1/1', allowed: false },
    { name: 'an exact name is not matched by its own prefix', table: 'read', client: 'bill', channel: 'invoices/v1/1', allowed: false },
    { name: 'a prefix matches a longer name', table: 'read', client: 'shop-eu', channel: 'orders/v1/1', allowed: true },
    { name: 'a prefix matches the bare prefix', table: 'read', client: 'shop-', channel: 'orders/v1/1', allowed: true },
    { name: 'a prefix does not match a shorter name', table: 'read', client: 'shop', channel: 'orders/v1/1', allowed: false },
    { name: 'a prefix is case-sensitive', table: 'read', client: 'SHOP-eu', channel: 'orders/v1/1', allowed: false },
    { name: '* matches every name', table: 'read', client: 'stranger', channel: 'public/v1/1', allowed: true },
    { name: 'grants of several matching rules add up', table: 'read', client: 'shop-eu', channel: 'public/v1/1', allowed: true },
    { name: '* does not grant what it does not list', table: 'read', client: 'stranger', channel: 'orders/v1/1', allowed: false },
  ],
);

describeAccess(
  'defaultPolicy deny: no matching list, no access',
  compileRules(
    [
      { client: 'reader', read: ['orders/*'] },
      { client: 'nothing', read: [], write: [] },
    ],
    'deny',
  ),
  [
    { name: 'a client matching no rule reads nothing', table: 'read', client: 'stranger', channel: 'other/v1/1', allowed: false },
    { name: 'a client matching no rule writes nothing', table: 'write', client: 'stranger', channel: 'other/v1/1', allowed: false },
    { name: 'a rule without write list grants no write', table: 'write', client: 'reader', channel: 'other/v1/1', allowed: false },
    { name: 'an empty read list reads nothing', table: 'read', client: 'nothing', channel: 'orders/v1/1', allowed: false },
  ],
);

describeAccess('an empty rules list denies everything', compileRules([], 'deny'), [
  { name: 'read refused', table: 'read', client: 'anyone', channel: 'orders/v1/1', allowed: false },
  { name: 'write refused', table: 'write', client: 'anyone', channel: 'orders/v1/*', allowed: false },
]);

describeAccess(
  'defaultPolicy allow: only clients with a list for that table are restricted',
  compileRules(
    [
      { client: 'reader', read: ['orders/v1/*'] },
      { client: 'shop-*', write: ['orders/v1/*'] },
      { client: 'nothing', read: [] },
    ],
    'allow',
  ),
  [
    { name: 'a client matching no rule reads anything', table: 'read', client: 'stranger', channel: 'other/v1/1', allowed: true },
    { name: 'a client matching no rule reads *', table: 'read', client: 'stranger', channel: 'other/v1/*', allowed: true },
    { name: 'a client matching no rule writes anything', table: 'write', client: 'stranger', channel: 'other/v1/*', allowed: true },
    { name: "a client matching no rule reads others' channels", table: 'read', client: 'stranger', channel: 'orders/v1/1', allowed: true },
    { name: 'a read list still restricts read', table: 'read', client: 'reader', channel: 'other/v1/1', allowed: false },
    { name: 'a read list still grants its channels', table: 'read', client: 'reader', channel: 'orders/v1/1', allowed: true },
    { name: 'without a write list, write is open', table: 'write', client: 'reader', channel: 'other/v1/1', allowed: true },
    { name: 'a prefix write list restricts write', table: 'write', client: 'shop-eu', channel: 'other/v1/1', allowed: false },
    { name: 'a prefix write list grants its channels', table: 'write', client: 'shop-eu', channel: 'orders/v1/*', allowed: true },
    { name: 'without a read list, read is open', table: 'read', client: 'shop-eu', channel: 'other/v1/1', allowed: true },
    { name: 'an empty read list reads nothing', table: 'read', client: 'nothing', channel: 'orders/v1/1', allowed: false },
  ],
);

describe('reserved ids (! read patterns)', () => {
  const rules = compileRules(
    [
      { client: 'owner', read: ['!orders/v1/42', '!invoices/v1/*', '!audit/*'] },
      { client: 'other', read: ['orders/*', 'invoices/*', 'public/*'] },
    ],
    'deny',
  );
  it.each([
    { name: '!ep/ver/id reserves that id', channel: 'orders/v1/42', reserved: true },
    { name: '!ep/ver/id leaves other ids free', channel: 'orders/v1/43', reserved: false },
    { name: '!ep/ver/id leaves other versions free', channel: 'orders/v2/42', reserved: false },
    { name: '!ep/ver/* reserves every id of that version', channel: 'invoices/v1/anything', reserved: true },
    { name: '!ep/ver/* leaves other versions free', channel: 'invoices/v2/anything', reserved: false },
    { name: '!ep/* reserves every id of every version', channel: 'audit/v7/x', reserved: true },
    { name: 'a plain read pattern reserves nothing', channel: 'public/v1/1', reserved: false },
    { name: '* is never reserved, even under !ep/*', channel: 'audit/v1/*', reserved: false },
    { name: '* is never reserved, even under !ep/ver/*', channel: 'invoices/v1/*', reserved: false },
  ])('$name', ({ channel, reserved }) => {
    const [endpoint = '', version = '', id = ''] = channel.split('/');
    expect(rules.isReserved(endpoint, version, id)).toBe(reserved);
  });

  it.each<{ name: string; table: Table; channel: string; allowed: boolean }>([
    { name: '!ep/ver/id grants read of that id', table: 'read', channel: 'orders/v1/42', allowed: true },
    { name: '!ep/ver/id does not grant *', table: 'read', channel: 'orders/v1/*', allowed: false },
    // Kitten-MQ README: "! means the client cannot listen on *. It must listen on a specific channel id"
    { name: '!ep/ver/* does not grant read of *', table: 'read', channel: 'invoices/v1/*', allowed: false },
    { name: '!ep/ver/* grants read of any id', table: 'read', channel: 'invoices/v1/7', allowed: true },
    { name: '!ep/* does not grant read of *', table: 'read', channel: 'audit/v3/*', allowed: false },
    { name: '!ep/* grants read of any id', table: 'read', channel: 'audit/v3/x', allowed: true },
    { name: 'a reservation grants no write', table: 'write', channel: 'orders/v1/42', allowed: false },
  ])('$name', ({ table, channel, allowed }) => {
    expect(can(rules, table, 'owner', channel)).toBe(allowed);
  });

  it("another client's plain grant still reads the reserved id (ownership is the broker's job)", () => {
    expect(can(rules, 'read', 'other', 'orders/v1/42')).toBe(true);
  });
});

describe('ids in patterns are canonical', () => {
  const rules = compileRules([{ client: 'c', read: ['files/v1/a%2fb', 'files/v1/50%25', 'files/v1/%2A'] }], 'deny');
  it.each([
    { name: 'lowercase escape matches the canonical uppercase', id: 'a%2Fb', allowed: true },
    { name: 'an escaped % matches', id: '50%25', allowed: true },
    { name: 'an escaped * is an ordinary id', id: '%2A', allowed: true },
    { name: 'the escaped * id does not grant the wildcard', id: '*', allowed: false },
  ])('$name', ({ id, allowed }) => {
    expect(rules.canRead('c', 'files', 'v1', id)).toBe(allowed);
  });
});

describe('prototype-named ids and names are ordinary', () => {
  const names = ['__proto__', 'constructor', 'hasOwnProperty', 'toString', 'valueOf'];
  const rules = compileRules(
    [
      { client: '__proto__', read: ['constructor/v1/__proto__'], write: ['__proto__/*'] },
      { client: 'constructor', read: ['!hasOwnProperty/toString/constructor'] },
    ],
    'deny',
  );
  it.each(names)('%s as a client matching no rule gets nothing', (name) => {
    const noRuleFor = compileRules([{ client: 'someone', read: ['constructor/*'], write: ['__proto__/*'] }], 'deny');
    expect(noRuleFor.canRead(name, 'constructor', 'v1', '__proto__')).toBe(false);
    expect(noRuleFor.canWrite(name, '__proto__', 'v1', '*')).toBe(false);
    expect(noRuleFor.matchesAnyRule(name)).toBe(false);
  });
  it.each(names)('%s as an id is not granted by the __proto__ rule', (id) => {
    expect(rules.canRead('__proto__', 'constructor', 'v1', id)).toBe(id === '__proto__');
  });
  it.each(names)('%s as an endpoint, version or id is not reserved by accident', (name) => {
    expect(rules.isReserved(name, name, name)).toBe(false);
  });
  it('a rule for __proto__ works', () => {
    expect(rules.canRead('__proto__', 'constructor', 'v1', '__proto__')).toBe(true);
    expect(rules.canWrite('__proto__', '__proto__', 'constructor', '*')).toBe(true);
    expect(rules.matchesAnyRule('__proto__')).toBe(true);
  });
  it('a reservation on prototype names works', () => {
    expect(rules.isReserved('hasOwnProperty', 'toString', 'constructor')).toBe(true);
    expect(rules.canRead('constructor', 'hasOwnProperty', 'toString', 'constructor')).toBe(true);
  });
});

describe('matchesAnyRule (auto-registration, SPEC §4)', () => {
  const withAll: RuleConfig[] = [{ client: '*', read: [] }];
  const rules = compileRules([{ client: 'billing' }, { client: 'shop-*', write: ['orders/*'] }], 'deny');
  it.each([
    { name: 'an exact name, even with no lists', client: 'billing', matches: true },
    { name: 'a name under a prefix', client: 'shop-1', matches: true },
    { name: 'a name under no pattern', client: 'stranger', matches: false },
    { name: 'a longer name than an exact pattern', client: 'billing-2', matches: false },
  ])('$name', ({ client, matches }) => {
    expect(rules.matchesAnyRule(client)).toBe(matches);
  });
  it('* matches every name', () => expect(compileRules(withAll, 'deny').matchesAnyRule('x')).toBe(true));
  it('an empty rules list matches no name', () => expect(compileRules([], 'allow').matchesAnyRule('x')).toBe(false));
});

describe('bad rules are refused with the key', () => {
  it.each([
    { name: 'one part', rule: { client: 'c', read: ['orders'] }, key: 'rules.1.read.0' },
    { name: 'ep/ver without id', rule: { client: 'c', read: ['ok/*', 'orders/v1'] }, key: 'rules.1.read.1' },
    { name: 'four parts', rule: { client: 'c', write: ['orders/v1/a/b'] }, key: 'rules.1.write.0' },
    { name: '* as endpoint', rule: { client: 'c', read: ['*/v1/1'] }, key: 'rules.1.read.0' },
    { name: '* as endpoint of ep/*', rule: { client: 'c', read: ['*/*'] }, key: 'rules.1.read.0' },
    { name: '* alone', rule: { client: 'c', read: ['*'] }, key: 'rules.1.read.0' },
    { name: '* as version', rule: { client: 'c', read: ['orders/*/1'] }, key: 'rules.1.read.0' },
    { name: 'a bad endpoint character', rule: { client: 'c', read: ['ord.ers/v1/1'] }, key: 'rules.1.read.0' },
    { name: 'an endpoint too long', rule: { client: 'c', read: [`${'e'.repeat(65)}/*`] }, key: 'rules.1.read.0' },
    { name: 'a bad version character', rule: { client: 'c', write: ['orders/v 1/1'] }, key: 'rules.1.write.0' },
    { name: 'a version too long', rule: { client: 'c', write: [`orders/${'v'.repeat(33)}/1`] }, key: 'rules.1.write.0' },
    { name: 'an empty endpoint', rule: { client: 'c', read: ['/v1/1'] }, key: 'rules.1.read.0' },
    { name: 'an empty version', rule: { client: 'c', read: ['orders//1'] }, key: 'rules.1.read.0' },
    { name: 'an empty id', rule: { client: 'c', read: ['orders/v1/'] }, key: 'rules.1.read.0' },
    { name: 'a bare % in the id', rule: { client: 'c', read: ['orders/v1/50%'] }, key: 'rules.1.read.0' },
    { name: 'an id too long', rule: { client: 'c', read: [`orders/v1/${'i'.repeat(257)}`] }, key: 'rules.1.read.0' },
    { name: '! in a write pattern', rule: { client: 'c', write: ['!orders/v1/1'] }, key: 'rules.1.write.0' },
    { name: '!! in a read pattern', rule: { client: 'c', read: ['!!orders/v1/1'] }, key: 'rules.1.read.0' },
    { name: 'a lone !', rule: { client: 'c', read: ['!'] }, key: 'rules.1.read.0' },
    { name: 'spaces around a pattern', rule: { client: 'c', read: [' orders/v1/1'] }, key: 'rules.1.read.0' },
    { name: '* inside a client name', rule: { client: 'a*b', read: [] }, key: 'rules.1.client' },
    { name: 'a double * client', rule: { client: '**', read: [] }, key: 'rules.1.client' },
    { name: 'a client with a slash', rule: { client: '../x', read: [] }, key: 'rules.1.client' },
    { name: 'an empty client', rule: { client: '', read: [] }, key: 'rules.1.client' },
  ])('$name', ({ rule, key }) => {
    const rules: RuleConfig[] = [{ client: 'fine', read: ['orders/*'] }, rule];
    const error = configError(() => compileRules(rules, 'deny'));
    expect(error.key).toBe(key);
  });

  it('accepts every documented form', () => {
    const good: RuleConfig[] = [
      { client: '*', read: ['a/*', 'a/v1.0/*', 'a/v_1-2/id', '!b/*', '!b/v1/*', '!b/v1/x'], write: ['a/*', 'a/v1/*', 'a/v1/x'] },
      { client: 'svc.name_1-2', read: [`${'e'.repeat(64)}/${'v'.repeat(32)}/${'i'.repeat(256)}`] },
      { client: 'svc-*' },
    ];
    expect(() => compileRules(good, 'deny')).not.toThrow();
  });
});
