// The Node email validators of tests/frameworks (README.md there), pinned and unmodified, as an
// app uses them: each gets a value a reader exposed and answers what the app would store (the
// validator's normalized value, or the trimmed/raw value for a yes/no validator), or nothing when
// it refuses.
'use strict';

const validator = require('validator');
const { body, validationResult, matchedData } = require('express-validator');
const { z } = require('zod');
const Joi = require('joi');
const { IsEmail, validateSync } = require('class-validator');

// express-validator's documented signup chain, run on a request whose body holds the value.
const chain = body('email').trim().isEmail().normalizeEmail();

async function expressValidator(v) {
  const req = { body: { email: v } };
  await chain.run(req);
  if (!validationResult(req).isEmpty()) return [];
  return [matchedData(req).email];
}

// zod 4: z.email() is the top-level string format; z.string().trim().email() the chained form.
const zodTrim = z.string().trim().pipe(z.email());
const zodChained = z.string().trim().email();
// joi's email() checks the TLD against IANA's list, bundled in the package (no network): the
// defaults, which is what an app gets unless it opts out.
const joi = Joi.string().trim().email();

// NestJS's DTO: `@IsEmail() email: string`, applied without TypeScript's decorator syntax.
class SignupDto {}
IsEmail()(SignupDto.prototype, 'email');

function classValidator(v) {
  const dto = Object.assign(new SignupDto(), { email: v });
  return validateSync(dto).length ? [] : [dto.email];
}

const yes = (ok, v) => (ok ? [v] : []);
const parsed = (r) => (r.success ? [r.data] : []);

const validators = {
  'validator.isEmail': (v) => yes(validator.isEmail(v), v),
  'validator.isEmail.trim': (v) => yes(validator.isEmail(v.trim()), v.trim()),
  'validator.isEmail+allow_display_name': (v) => yes(validator.isEmail(v, { allow_display_name: true }), v),
  'validator.normalizeEmail': (v) => (validator.isEmail(v) ? [validator.normalizeEmail(v)].filter(Boolean) : []),
  'express-validator.trim.isEmail.normalizeEmail': expressValidator,
  'zod.string.trim.email': (v) => parsed(zodChained.safeParse(v)),
  'zod.trim.pipe.email': (v) => parsed(zodTrim.safeParse(v)),
  'joi.string.trim.email': (v) => {
    const r = joi.validate(v);
    return r.error ? [] : [r.value];
  },
  'class-validator.IsEmail': classValidator,
};

// {validator: [[value, stored], ...]} for the values each validator accepted.
async function validate(values) {
  const out = {};
  for (const [name, f] of Object.entries(validators)) {
    out[name] = [];
    for (const v of values) {
      let stored = [];
      try {
        stored = await f(v);
      } catch {
        stored = [];
      }
      for (const s of stored) out[name].push([v, String(s)]);
    }
  }
  return out;
}

module.exports = { validate };
