ALTER SECURITY POLICY [dbo].[TenantPolicy]
    DROP FILTER PREDICATE ON [dbo].[Schedules],
    DROP BLOCK PREDICATE ON [dbo].[Schedules] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[Schedules] AFTER UPDATE,
    DROP FILTER PREDICATE ON [dbo].[ScheduleStates],
    DROP BLOCK PREDICATE ON [dbo].[ScheduleStates] AFTER INSERT,
    DROP BLOCK PREDICATE ON [dbo].[ScheduleStates] AFTER UPDATE;
