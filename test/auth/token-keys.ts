/** Query keys that name the token (refused) and keys that only resemble it (accepted). */
export const TOKEN_KEYS = [
  'token',
  'TOKEN',
  'Token',
  'tOkEn',
  'token[]',
  'token[0]',
  'TOKEN[a][b]',
  'to%6Ben',
  '%74oken',
  '%54%4F%4B%45%4E',
  'token%5B%5D',
  'token%5b0%5d',
];
export const OTHER_KEYS = [
  'tokens',
  'mytoken',
  'token_id',
  'tok',
  'to%6Bens',
  'token%20',
  '%20token',
  'x[token]',
];
