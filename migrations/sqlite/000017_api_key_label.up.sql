-- migration: additive
-- Keys carry an optional operator label and when they were last used (DESIGN.md section 8:
-- `keys list` shows label, role, created and last used, so a rotation can see the old key
-- fall idle before revoking it). Both columns are nullable: existing keys have neither. The
-- label (1 to 100 printable characters) is checked by the tenancy store.
ALTER TABLE ApiKeys ADD COLUMN Label TEXT NULL;
ALTER TABLE ApiKeys ADD COLUMN LastUsedAt DATETIME NULL;
