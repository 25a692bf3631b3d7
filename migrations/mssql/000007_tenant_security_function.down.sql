-- 000008's down drops the policy that binds this function first.
DROP FUNCTION [dbo].[fn_TenantAccess];
