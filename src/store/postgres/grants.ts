import type { SqlRunner } from 'tessera-tokens/internal/store/sql/runner.js';

/** Every table `tessera serve` reads and writes rows of (a table a later release adds is listed by that release). */
const TABLES = [
  'apps',
  'tokens',
  'credentials',
  'revoked_tokens',
  'keys',
  'events',
  'event_counts',
  'event_counts_hourly',
  'event_count_writers',
  'developers',
  'developer_sessions',
  'one_time_links',
  'app_members',
  'developer_events',
  'once_claims',
  'attestation_debug_tokens',
  'attestation_claims',
  'pow_serial_blocks',
  'attestation_settings',
  'attestation_keys',
  'jwt_keys',
  'status_list_blocks',
  'status_list_next',
  'status_list_revocations',
  'webhooks',
  'webhook_deliveries',
  'pending_alerts',
  'alert_notices',
  'alert_opt_outs',
  'mail_outbox',
  'instances',
  'upgrade_state',
] as const;

const ROW_PRIVILEGES = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const;

/**
 * What the database role `tessera serve` runs as lacks of the grants docs/deployment.md lists
 * ("Database roles"): row privileges on every table, SELECT on schema_migrations. An error naming
 * them, or undefined when it has them all. One query at start-up, so that a missing grant is said
 * then, not as a 500 of the first request that needs it.
 */
export async function missingGrants(sql: SqlRunner): Promise<Error | undefined> {
  const rows = await sql.all<{ role: string; table_name: string; privilege: string }>(
    `SELECT current_user AS role, t.table_name, p.privilege
       FROM unnest(CAST(:tables AS text[])) AS t(table_name)
       CROSS JOIN unnest(CAST(:privileges AS text[])) AS p(privilege)
      WHERE to_regclass(t.table_name) IS NOT NULL AND NOT has_table_privilege(to_regclass(t.table_name), p.privilege)
     UNION ALL
     SELECT current_user, 'schema_migrations', 'SELECT' WHERE NOT has_table_privilege('schema_migrations', 'SELECT')`,
    { tables: [...TABLES], privileges: [...ROW_PRIVILEGES] },
  );
  if (rows.length === 0) return undefined;
  // Said in the order of TABLES and ROW_PRIVILEGES (schema_migrations last), whatever order the plan
  // gives the rows in.
  const position = (row: (typeof rows)[number]) => {
    const table = (TABLES as readonly string[]).indexOf(row.table_name);
    return (table === -1 ? TABLES.length : table) * ROW_PRIVILEGES.length + (ROW_PRIVILEGES as readonly string[]).indexOf(row.privilege);
  };
  const byTable = new Map<string, string[]>();
  for (const row of [...rows].sort((a, b) => position(a) - position(b))) {
    byTable.set(row.table_name, [...(byTable.get(row.table_name) ?? []), row.privilege]);
  }
  const missing = [...byTable].map(([table, privileges]) => `${privileges.join(', ')} on ${table}`).join('; ');
  const role = rows[0]!.role;
  return new Error(
    `Tessera does not start: the database role ${JSON.stringify(role)} lacks ${missing}. Grant them as docs/deployment.md says ` +
      `("Database roles"), e.g. GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}; as the schema's owner.`,
  );
}
